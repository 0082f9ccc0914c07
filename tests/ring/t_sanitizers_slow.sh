#!/usr/bin/env bash
# The ring tests again on ASan+UBSan builds of libanchor.so, the victims and
# anchorpost, and the thread storm under TSan.  Any report fails the test.
set -euo pipefail
cd "$ANCHOR_ROOT"
: "${BUILD:=$ANCHOR_ROOT/build}"
T=$ANCHOR_TEST_TMP
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export TSAN_OPTIONS=halt_on_error=1

echo "== ASan+UBSan build"
# In $BUILD/asan, shared with t_perun_corrupt_slow.py (tests/lib/asan_build.sh).
A=$BUILD/asan
bash tests/lib/asan_build.sh "$A/libanchor.so" "$A/anchorpost" "$A/victims/marker" "$A/victims/ring_check" "$A/victims/lapped"
for t in t_ring_storm.sh t_ring_kill9.py; do
	echo "== $t (asan)"
	case $t in
	*.sh) ANCHOR_TEST_SANITIZED=1 BUILD=$A STORM_COUNT=200000 FORK_COUNT=5000 ANCHOR_TEST_TMP=$T bash tests/ring/$t >"$T/$t.log" 2>&1 ;;
	*.py) BUILD=$A ANCHOR_TEST_TMP=$T "$PYTHON" tests/ring/$t >"$T/$t.log" 2>&1 ;;
	esac || { tail -n 30 "$T/$t.log"; exit 1; }
	if grep -qE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$T/$t.log"; then
		grep -E -A20 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$T/$t.log" | head -40
		exit 1
	fi
	tail -n 1 "$T/$t.log"
	rm -f "$T"/*.ring
done

echo "== anchorpost timeline over a profile with no stack in any bin (asan)"
# Issue 23 point 8: top_frames had no hit to sort and called qsort(NULL, 0)
# (glibc declares the base nonnull: UBSan's nonnull-attribute check).  The
# profile's samples are all empty stacks (py-spy's start-up/shutdown), on
# the ring's own thread so that the profile is accepted.
"$BUILD/tools/ringgen" "$T/tl.ring" --rank 0 --nranks 1 --steps 20 --host hostA --power-out "$T/tl.pw.csv" >/dev/null
"$PYTHON" tools/ringgen/perun_synth.py "$T/tl.hdf5" "hostA=$T/tl.pw.csv" >/dev/null
printf '%s' '{"profiles":[{"type":"sampled","name":"Process 1000 Thread 1000 \"MainThread\"","unit":"seconds",' \
	'"startValue":0.0,"endValue":0.03,"samples":[[],[],[]],"weights":[0.01,0.01,0.01]}],' \
	'"shared":{"frames":[]},"exporter":"py-spy@0.4.1"}' >"$T/tl.json"
"$A/anchorpost" timeline --ring "$T/tl.ring" --perun "$T/tl.hdf5" --profile "$T/tl.json" -o "$T/tl.csv" \
	>"$T/tl.log" 2>&1 || { cat "$T/tl.log"; exit 1; }
if grep -qE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' "$T/tl.log"; then cat "$T/tl.log"; exit 1; fi
grep -q '^t_s,' "$T/tl.csv" || { echo "FAIL: timeline.csv has no header"; exit 1; }
echo "ok: timeline with no sampled stack in any bin: sanitizers clean"

echo "== TSan thread storm"
TS=$BUILD/tsan
make -s -j"$(nproc)" CC=clang ZDEFS= B="$TS" OPT="-O1 -g" SAN="-fsanitize=thread" "$TS/libanchor.so" "$TS/victims/marker" "$TS/victims/ring_check"
ANCHOR_FILE=$T/tsan.ring ANCHOR_RING_SIZE=64M "$TS/victims/marker" threads 8 50000 2>"$T/tsan.err" || { cat "$T/tsan.err"; exit 1; }
if grep -q "WARNING: ThreadSanitizer" "$T/tsan.err"; then head -60 "$T/tsan.err"; exit 1; fi
"$TS/victims/ring_check" seqs "$T/tsan.ring" | tail -n 1
"$TS/victims/ring_check" seqs "$T/tsan.ring" | grep -q "^total 400000 streams 8 torn 0 bad_check 0"
echo "ok: sanitizers clean"
