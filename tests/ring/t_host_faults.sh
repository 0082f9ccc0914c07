#!/usr/bin/env bash
# Fault injection on the host side (issue 15): every libc call libanchor
# makes (open, fstat, ftruncate, fallocate, mmap, link, write, ...) fails
# once, as its 1st, 2nd or 3rd call, on the path that creates a ring and
# on the one that attaches to an existing ring.  The host's output and
# exit status must not change, stderr may hold at most one anchor line per
# process, and whatever is left at ANCHOR_FILE is a readable ring.  Then
# kill -9 at the calls that build a new ring (a creator dying in the
# constructor): nothing half-made is left, and the next process attaches
# at once.  The shim (tests/victims/faultshim.c) counts only calls made
# from libanchor.so.
set -uo pipefail
T=$ANCHOR_TEST_TMP
LIB=$BUILD/libanchor.so
AP=$BUILD/anchorpost
SHIM=$T/faultshim.so
cc -std=c11 -O2 -Wall -Wextra -shared -fPIC -o "$SHIM" "$ANCHOR_ROOT/tests/victims/faultshim.c" -ldl || exit 1
fails=0 runs=0

host() { # ring, extra env...; runs the host, sets rc/out/err files
	local R=$1
	shift
	env "$@" LD_PRELOAD="$SHIM:$LIB" ANCHOR_FILE="$R" ANCHOR_RING_SIZE=64K \
		sh -c 'echo hello; /bin/true; exit 3' >"$T/out" 2>"$T/err"
	echo $? >"$T/rc"
}

ANCHOR_FILE=$T/good.ring ANCHOR_RING_SIZE=64K LD_PRELOAD=$LIB /bin/true
for fn in open close fstat fstatvfs getrlimit ftruncate posix_fallocate fallocate mmap madvise linkat unlink \
	pread read write sigaction readlink getcwd gethostname; do
	for nth in 1 2 3; do
		for path in create attach; do
			R=$T/f.ring
			rm -f "$R" "$R".new.*
			[ $path = attach ] && cp "$T/good.ring" "$R"
			host "$R" FAULT_FN=$fn FAULT_NTH=$nth
			runs=$((runs + 1))
			rc=$(cat "$T/rc") why=""
			[ "$rc" = 3 ] || why="exit $rc"
			[ "$(cat "$T/out")" = hello ] || why="$why stdout changed"
			grep -v '^anchor\[' "$T/err" | grep -q . && why="$why foreign stderr"
			[ -z "$(grep -o '^anchor\[[0-9]*\]' "$T/err" | sort | uniq -d)" ] || why="$why two lines from one process"
			if [ -e "$R" ] && ! "$AP" info "$R" >/dev/null 2>"$T/info.err"; then
				why="$why ring left unreadable: $(cat "$T/info.err")"
			fi
			ls "$T" | grep -q '\.new\.' && why="$why temp file left"
			if [ -n "$why" ]; then
				echo "FAIL $fn #$nth ($path): $why"
				sed 's/^/    /' "$T/err"
				fails=$((fails + 1))
			elif [ -s "$T/err" ]; then
				echo "ok   $fn #$nth ($path): $(head -n 1 "$T/err" | cut -c1-150)"
			fi
		done
	done
done

echo "== kill -9 inside the constructor while it builds a new ring"
for fn in fstatvfs ftruncate posix_fallocate mmap linkat; do
	R=$T/k.ring
	rm -f "$R"
	host "$R" FAULT_FN=$fn FAULT_NTH=1 FAULT_MODE=kill
	runs=$((runs + 1))
	rc=$(cat "$T/rc")
	left=none
	[ -e "$R" ] && left=$(stat -c %s "$R")
	# The next process: no message, no wait, a readable ring with it.
	host "$R"
	if [ "$rc" = 137 ] && [ "$(cat "$T/rc")" = 3 ] && [ ! -s "$T/err" ] && "$AP" info "$R" >/dev/null 2>&1 &&
		! ls "$T" | grep -q '\.new\.'; then
		echo "ok   killed at $fn: left $left at the path; next process attached cleanly"
	else
		echo "FAIL killed at $fn (exit $rc, left $left): next process exit $(cat "$T/rc")"
		cat "$T/err"
		fails=$((fails + 1))
	fi
done
echo "$runs runs, $fails failures"
[ $fails -eq 0 ]
