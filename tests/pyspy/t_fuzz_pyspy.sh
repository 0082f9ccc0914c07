#!/usr/bin/env bash
# A short libFuzzer run (~24 s in all) of the py-spy and torch.profiler reader targets; the
# long run is `make fuzz` (tests/fuzz/run.sh 300).
set -u
cd "$ANCHOR_ROOT"
command -v clang >/dev/null || { echo "clang not installed"; exit 77; }
# Only the py-spy targets here: run.sh with a private copy of the list.
tmp=$ANCHOR_TEST_TMP/fuzzroot
mkdir -p "$tmp/tests/fuzz"
cp -r postproc anchors preload "$tmp/"
cp tests/fuzz/fuzz_speedscope.c tests/fuzz/fuzz_chrometrace.c tests/fuzz/fuzz_raw.c tests/fuzz/fuzz_torch.c tests/fuzz/fuzz_pyspy.h tests/fuzz/run.sh "$tmp/tests/fuzz/"
cp -r tests/fuzz/seeds "$tmp/tests/fuzz/"
cp tests/data/pyspy/*.speedscope.json "$tmp/tests/fuzz/seeds/speedscope/"
cp tests/data/pyspy/*.chrometrace.json "$tmp/tests/fuzz/seeds/chrometrace/"
cp tests/data/pyspy/*.raw.txt "$tmp/tests/fuzz/seeds/raw/"
[ -n "${SHARED:-}" ] && cp "$SHARED"/fixtures/pyspy/*.json "$tmp/tests/fuzz/seeds/speedscope/" 2>/dev/null
BUILD=$tmp/build bash "$tmp/tests/fuzz/run.sh" 24
rc=$?
echo "fuzzed speedscope, chrometrace, raw and torch.profiler readers for ~6 s each (exit $rc)"
exit $rc
