#!/usr/bin/env bash
# anchor_mark from C vs clock_gettime, warm and first lap, 1 vs 2 threads,
# and the cost with no ring attached.  `make bench` runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
mkdir -p "$B/bench"
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -pthread -o "$B/bench/ring_mark" bench/ring_mark.c -L"$B" -lanchor -Wl,-rpath,"$PWD/$B"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "== anchor_mark (C), ring of 2^20 slots (64 MiB)"
ANCHOR_FILE=$T/bench.ring ANCHOR_RING_SIZE=64M "$B/bench/ring_mark" 5000000 1048576
echo "== anchor_mark with ANCHOR_DISABLE=1 (no ring attached)"
ANCHOR_DISABLE=1 "$B/bench/ring_mark" 20000000 0 | grep -E 'attached|clock|warm'
