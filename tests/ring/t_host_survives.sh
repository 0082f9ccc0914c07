#!/usr/bin/env bash
# The host survives whatever happens to the ring's file (issue 15, 1-3, 5,
# 6, 13): a sparse ring on a full filesystem, a ring truncated under a
# running host, `ulimit -f` below the ring size, dlclose of libanchor, a
# zero-filled or empty ring at ANCHOR_FILE, bad ANCHOR_RING_SIZE values and
# a rank variable that would escape the ring's directory.  Each case runs a
# real host and checks its output and exit status are what they are
# without anchor, with at most one "anchor[pid]:" line on stderr.
set -uo pipefail
T=$ANCHOR_TEST_TMP
LIB=$BUILD/libanchor.so
AP=$BUILD/anchorpost
PY=${PYTHON:-python3}
fails=0

ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# One anchor line at most per process, and one contains $1 (when given).
one_line() {
	local n
	n=$(grep -o '^anchor\[[0-9]*\]' "$2" | sort | uniq -d | wc -l)
	if [ "$n" -gt 0 ]; then return 1; fi
	if [ -n "$1" ]; then grep -q "^anchor\[.*$1" "$2" || return 1; fi
	return 0
}

echo "== 1: a sparse ring attached on a full filesystem, Python host that forks"
if unshare -m true 2>/dev/null; then
	mkdir -p "$T/full"
	cat >"$T/sparse.sh" <<EOF
set -u
mount -t tmpfs -o size=2m tmpfs "$T/full" || exit 77
ANCHOR_FILE=$T/sparse_src.ring ANCHOR_RING_SIZE=1M $BUILD/victims/marker threads 1 10 || exit 90
cp --sparse=always $T/sparse_src.ring $T/full/r.ring || exit 91
cat /dev/zero >$T/full/fill 2>/dev/null
LD_PRELOAD=$LIB ANCHOR_FILE=$T/full/r.ring $PY -c '
import os
print("parent", flush=True)
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    os.waitpid(pid, 0)
print("done")
' >$T/sparse.out 2>$T/sparse.err
echo \$? >$T/sparse.rc
# A new ring larger than the free space is refused up front, not filled.
rm -f $T/full/fill
LD_PRELOAD=$LIB ANCHOR_FILE=$T/full/big.ring ANCHOR_RING_SIZE=16G sh -c 'echo hi' >$T/big.out 2>$T/big.err
echo \$? >$T/big.rc
ls -A $T/full >$T/big.ls
EOF
	unshare -m bash "$T/sparse.sh"
	rc=$(cat "$T/sparse.rc" 2>/dev/null || echo none)
	if [ "$rc" = 0 ] && [ "$(cat "$T/sparse.out")" = $'parent\ndone' ] && one_line "" "$T/sparse.err"; then
		ok "sparse ring on full fs: exit 0, output intact ($(head -c 200 "$T/sparse.err"))"
	else
		bad "sparse ring on full fs: exit $rc"; cat "$T/sparse.err"
	fi
	if [ "$(cat "$T/big.rc")" = 0 ] && [ "$(cat "$T/big.out")" = hi ] && one_line "does not fit" "$T/big.err" &&
		! grep -q big "$T/big.ls"; then
		ok "16G ring on a 2M filesystem: refused, nothing left ($(cat "$T/big.err"))"
	else
		bad "16G ring on a 2M filesystem: exit $(cat "$T/big.rc")"; cat "$T/big.err" "$T/big.ls"
	fi
else
	echo "skip: unshare -m not permitted here"
fi

echo "== 2: another process truncates the ring while the host marks"
for size in 0 8192; do
	R=$T/trunc$size.ring
	LD_PRELOAD=$LIB ANCHOR_FILE=$R ANCHOR_RING_SIZE=1M $PY -c '
import anchor, subprocess, sys
for i in range(2000):
    anchor.mark("before")
subprocess.run(["truncate", "-s", sys.argv[1], sys.argv[2]], check=True)
for i in range(100000):
    anchor.mark("after")
with anchor.phase("ph"):
    pass
print("survived")
sys.exit(3)
' "$size" "$R" >"$T/trunc.out" 2>"$T/trunc.err"
	rc=$?
	if [ $rc -eq 3 ] && [ "$(cat "$T/trunc.out")" = survived ] && one_line "anchoring stopped" "$T/trunc.err"; then
		ok "truncated to $size under the host: exit 3, one line: $(cat "$T/trunc.err")"
	else
		bad "truncated to $size: exit $rc"; cat "$T/trunc.err"
	fi
done

# The program installs its own SIGBUS handler after libanchor attached
# (faulthandler): the ring's fault still detaches, and a SIGBUS of the
# program's own still reaches faulthandler and kills as before.
R=$T/fh.ring
LD_PRELOAD=$LIB ANCHOR_FILE=$R ANCHOR_RING_SIZE=1M $PY -c '
import anchor, faulthandler, subprocess, sys
faulthandler.enable()
anchor.mark("a")
subprocess.run(["truncate", "-s", "0", sys.argv[1]], check=True)
for i in range(100000):
    anchor.mark("after")
print("survived")
' "$R" >"$T/fh.out" 2>"$T/fh.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$T/fh.out")" = survived ] && one_line "anchoring stopped" "$T/fh.err"; then
	ok "faulthandler installed after attach, ring truncated: exit 0"
else
	bad "faulthandler + truncated ring: exit $rc"; cat "$T/fh.err"
fi
LD_PRELOAD=$LIB ANCHOR_FILE=$R.2 ANCHOR_RING_SIZE=1M $PY -c '
import faulthandler, mmap, os, sys
faulthandler.enable()
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(bytes(8192))
f = open(p, "r+b")
m = mmap.mmap(f.fileno(), 8192)
os.truncate(p, 0)
m[4096] = 1
print("not reached")
' "$T/own.bin" >"$T/own.out" 2>"$T/own.err"
rc=$?
if [ $rc -eq 135 ] && grep -q "Bus error" "$T/own.err" && [ ! -s "$T/own.out" ]; then
	ok "the program's own SIGBUS: faulthandler ran, exit 135 as without anchor"
else
	bad "the program's own SIGBUS: exit $rc"; cat "$T/own.err"
fi

# Handlers installed behind libanchor's sigaction: a raw rt_sigaction
# system call (marker rawbus), and the Python module's own writer with no
# LD_PRELOAD to interpose libc (faulthandler.enable() after import).  The
# guard finds itself replaced at its next check (chunk claims, at most
# once a ms; SYNC, about once a second) and goes back in front.
R=$T/rawbus.ring
ANCHOR_FILE=$R ANCHOR_RING_SIZE=1M "$BUILD/victims/marker" rawbus >"$T/rawbus.out" 2>"$T/rawbus.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$T/rawbus.out")" = survived ] && one_line "anchoring stopped" "$T/rawbus.err"; then
	ok "SIGBUS handler installed with a raw rt_sigaction, ring truncated: exit 0"
else
	bad "raw rt_sigaction handler + truncated ring: exit $rc (3: the ring's SIGBUS reached the host's handler)"
	cat "$T/rawbus.err"
fi
ANCHOR_FILE=$R.2 ANCHOR_RING_SIZE=1M "$BUILD/victims/marker" rawbus "$T/rawbus-own.bin" >"$T/rawown.out" 2>"$T/rawown.err"
rc=$?
if [ $rc -eq 3 ] && grep -q "its own SIGBUS handler ran" "$T/rawown.err"; then
	ok "the raw handler still gets the program's own SIGBUS: exit 3"
else
	bad "raw handler, the program's own SIGBUS: exit $rc"; cat "$T/rawown.err"
fi
R=$T/pyown.ring
env -u LD_PRELOAD ANCHOR_FILE=$R ANCHOR_RING_SIZE=1M $PY -c '
import anchor, faulthandler, os, sys, time
anchor.mark("a")
faulthandler.enable()
time.sleep(0.005)
for i in range(200):
    anchor.mark("b")
os.truncate(sys.argv[1], 0)
for i in range(100000):
    anchor.mark("after")
print("survived")
' "$R" >"$T/pyown.out" 2>"$T/pyown.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$T/pyown.out")" = survived ] && one_line "anchoring stopped" "$T/pyown.err"; then
	ok "Python module's own writer, faulthandler enabled after import, ring truncated: exit 0"
else
	bad "Python module's own writer + faulthandler + truncated ring: exit $rc"; cat "$T/pyown.err"
fi

echo "== 3: ulimit -f below the ring size"
R=$T/fsize.ring
bash -c "ulimit -f 1024; LD_PRELOAD=$LIB ANCHOR_FILE=$R exec /bin/echo hello" >"$T/fsize.out" 2>"$T/fsize.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$T/fsize.out")" = hello ] && one_line "file size limit" "$T/fsize.err" && [ ! -e "$R" ]; then
	ok "ulimit -f 1024 (512 KiB) under a 32M ring: exit 0, no file left, $(cat "$T/fsize.err")"
else
	bad "ulimit -f: exit $rc, ring left: $(ls -l "$R" 2>&1)"; cat "$T/fsize.err"
fi
# A ring that fits the limit still works.
rm -f "$R"
bash -c "ulimit -f 4096; LD_PRELOAD=$LIB ANCHOR_FILE=$R ANCHOR_RING_SIZE=1M exec /bin/echo hello" >"$T/fsize.out" 2>"$T/fsize.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$T/fsize.err" ] && "$AP" info "$R" >/dev/null 2>&1; then
	ok "ulimit -f 4096 with a 1M ring: attached"
else
	bad "ulimit -f 4096 with a 1M ring: exit $rc"; cat "$T/fsize.err"
fi

echo "== 5: dlclose of libanchor, then abort()"
ANCHOR_FILE=$T/dl.ring $PY -c '
import ctypes, _ctypes, os, sys
h = ctypes.CDLL(sys.argv[1])
_ctypes.dlclose(h._handle)
os.abort()
' "$LIB" 2>"$T/dl.err"
rc=$?
if [ $rc -eq 134 ]; then ok "abort after dlclose: exit 134 (SIGABRT)"; else bad "abort after dlclose: exit $rc, expected 134"; cat "$T/dl.err"; fi

echo "== 6: an empty and a zero-filled file at ANCHOR_FILE"
for kind in empty zero; do
	R=$T/$kind.ring
	: >"$R"
	[ $kind = zero ] && truncate -s 1M "$R"
	# strace counts the sleeps libanchor takes (waiting for a creator that
	# will never finish); none may be taken.
	if command -v strace >/dev/null; then
		ANCHOR_FILE=$R strace -f -qq -E LD_PRELOAD=$LIB -e trace=nanosleep,clock_nanosleep -o "$T/$kind.strace" \
			sh -c 'echo hi; exit 4' >"$T/$kind.out" 2>"$T/$kind.err"
		rc=$?
		nsl=$(grep -c sleep "$T/$kind.strace" || true)
	else
		LD_PRELOAD=$LIB ANCHOR_FILE=$R sh -c 'echo hi; exit 4' >"$T/$kind.out" 2>"$T/$kind.err"
		rc=$? nsl=0
	fi
	if [ $rc -eq 4 ] && [ "$(cat "$T/$kind.out")" = hi ] && [ "$nsl" -eq 0 ] && one_line "" "$T/$kind.err"; then
		ok "$kind ring: exit 4, no sleeps, $(head -n 1 "$T/$kind.err")"
	else
		bad "$kind ring: exit $rc, $nsl sleeps"; cat "$T/$kind.err"
	fi
done

echo "== 13: ANCHOR_RING_SIZE values"
check_size() { # value, expected rc of anchorpost info (0 attached), grep for stderr
	local v=$1 want=$2 msg=$3 R=$T/size_$RANDOM.ring
	LD_PRELOAD=$LIB ANCHOR_FILE=$R ANCHOR_RING_SIZE=$v sh -c 'echo hi' >"$T/size.out" 2>"$T/size.err"
	local rc=$? have=no
	[ -e "$R" ] && have=yes
	if [ $rc -eq 0 ] && [ "$(cat "$T/size.out")" = hi ] && [ $have = "$want" ] && one_line "$msg" "$T/size.err"; then
		ok "ANCHOR_RING_SIZE=$v: ring $have; $(cat "$T/size.err")"
	else
		bad "ANCHOR_RING_SIZE=$v: exit $rc, ring $have (want $want)"; cat "$T/size.err"
	fi
	[ -e "$R" ] && "$AP" info "$R" | grep slots
	rm -f "$R"
}
check_size 17179869185G no "too large"
check_size 1 yes "below the smallest ring"
check_size 64X no "not a size"
check_size 128K yes ""

# The Python module's own writer (no LD_PRELOAD) parses the same way.
ANCHOR_FILE=$T/pysize.ring ANCHOR_RING_SIZE=17179869185G $PY -c 'import anchor; anchor.mark("x"); print(anchor.enabled())' >"$T/size.out" 2>"$T/size.err"
if [ "$(cat "$T/size.out")" = False ] && [ ! -e "$T/pysize.ring" ] && one_line "" "$T/size.err"; then
	ok "Python module, ANCHOR_RING_SIZE=17179869185G: refused; $(cat "$T/size.err")"
else
	bad "Python module, ANCHOR_RING_SIZE=17179869185G: $(cat "$T/size.out")"; cat "$T/size.err"
fi

echo "== 13: RANK=../escaped with ANCHOR_FILE=%r.ring stays in the directory"
mkdir -p "$T/rk/d"
(cd "$T/rk/d" && RANK=../escaped LD_PRELOAD=$LIB ANCHOR_FILE='%r.ring' ANCHOR_RING_SIZE=64K sh -c 'echo hi' >/dev/null 2>"$T/rk.err")
if [ ! -e "$T/rk/escaped.ring" ] && [ "$(ls -A "$T/rk/d" | wc -l)" -eq 1 ]; then
	ok "rank ../escaped: ring $(ls -A "$T/rk/d") inside the directory"
else
	bad "rank ../escaped escaped: $(ls -R "$T/rk")"
fi

echo "failures: $fails"
[ $fails -eq 0 ]
