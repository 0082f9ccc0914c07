#!/usr/bin/env bash
# libFuzzer on the ring reader (ASan + UBSan), seeded with real rings: a
# short run here, longer under `make fuzz`.  Any crash, leak or UB fails.
set -euo pipefail
T=$ANCHOR_TEST_TMP
SECS=${FUZZ_SECONDS:-15}
command -v clang >/dev/null || { echo "clang missing (scripts/install-deps.sh installs it)"; exit 77; }
cd "$ANCHOR_ROOT"
clang -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I. -o "$T/fuzz_ring" tests/fuzz/fuzz_ring.c anchors/ring_reader.c anchors/ring_clock.c anchors/ring_procs.c
mkdir -p "$T/corpus"
# Seeds: small real rings (1024 slots) from threads, forks and a long name.
ANCHOR_FILE=$T/corpus/threads.ring ANCHOR_RING_SIZE=64K "$BUILD/victims/marker" threads 3 50
ANCHOR_FILE=$T/corpus/wrapped.ring ANCHOR_RING_SIZE=64K "$BUILD/victims/marker" threads 2 3000
ANCHOR_FILE=$T/corpus/forks.ring ANCHOR_RING_SIZE=64K "$BUILD/victims/marker" forks 2 20 "$BUILD/victims/marker"
head -c 5000 "$T/corpus/threads.ring" >"$T/corpus/short.ring"
cp tests/fuzz/seeds/ring/*.ring "$T/corpus/"  # committed seeds, incl. past crashes
"$T/fuzz_ring" -max_total_time="$SECS" -max_len=70000 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$T/" \
	"$T/corpus" 2>&1 | tail -n 12
echo "ok: no crash in ${SECS}s of fuzzing"
