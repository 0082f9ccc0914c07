#!/usr/bin/env bash
# tests/lib/asan_build.sh TARGET... - build TARGETs (paths under $BUILD/asan,
# e.g. "$BUILD/asan/anchorpost") with ASan + UBSan, the one set of flags
# every sanitized test uses.  Not a test itself (tests/run.sh runs t_*).
#
# Why one script: t_sanitizers_slow.sh and t_perun_corrupt_slow.py each
# built their own ASan anchorpost (build-asan/ at -O1, build/asan/ at -O2),
# the suite's longest compile twice over.  With the same directory and
# flags the second test finds the objects up to date (make has no record of
# flags, so they must not differ).  -fno-sanitize-recover=undefined: UB
# halts at its first report, as UBSAN_OPTIONS=halt_on_error=1 asks anyway.
set -euo pipefail
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
cd "$ANCHOR_ROOT"
exec make -s -j"$(nproc)" B="$BUILD/asan" OPT="-O1 -g" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" "$@"
