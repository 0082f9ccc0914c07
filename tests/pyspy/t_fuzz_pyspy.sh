#!/usr/bin/env bash
# A short libFuzzer run (~20 s in all) of the py-spy reader targets; the
# long run is `make fuzz` (tests/fuzz/run.sh 300).
set -u
cd "$ANCHOR_ROOT"
command -v clang >/dev/null || { echo "clang not installed"; exit 77; }
# Only the py-spy targets here: run.sh with a private copy of the list.
tmp=$ANCHOR_TEST_TMP/fuzzroot
mkdir -p "$tmp/tests/fuzz"
cp -r postproc anchors preload "$tmp/"
cp tests/fuzz/fuzz_speedscope.c tests/fuzz/fuzz_chrometrace.c tests/fuzz/fuzz_raw.c tests/fuzz/fuzz_pyspy.h tests/fuzz/run.sh "$tmp/tests/fuzz/"
cp -r tests/fuzz/seeds "$tmp/tests/fuzz/"
cp tests/data/pyspy/*.speedscope.json "$tmp/tests/fuzz/seeds/speedscope/"
cp tests/data/pyspy/*.chrometrace.json "$tmp/tests/fuzz/seeds/chrometrace/"
cp tests/data/pyspy/*.raw.txt "$tmp/tests/fuzz/seeds/raw/"
[ -n "${SHARED:-}" ] && cp "$SHARED"/fixtures/pyspy/*.json "$tmp/tests/fuzz/seeds/speedscope/" 2>/dev/null
BUILD=$tmp/build bash "$tmp/tests/fuzz/run.sh" 21
rc=$?
echo "fuzzed speedscope, chrometrace and raw readers for ~7 s each (exit $rc)"
exit $rc
