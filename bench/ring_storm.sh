#!/usr/bin/env bash
# bench/ring_storm.sh - issue 23's criterion for overwrite mode: 8 writer
# processes x 8 threads on one 32 MiB overwrite ring for 60 s; the storm
# pauses every ~0.2 s (each thread at a mark boundary), the ring is copied
# and every thread's values in the copy must be one contiguous run (only
# the oldest may be lost), then the exact account at the end.  The test
# tests/ring/t_ring_lapstorm.py is the same storm, 8 s on a 4 MiB ring.
#   STORM_SECONDS (60), STORM_RING (32M), BUILD (build/)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-$PWD/build}
T=$(mktemp -d /tmp/anchor-storm.XXXXXX)
trap 'rm -rf "$T"' EXIT
BUILD=$B ANCHOR_TEST_TMP=$T STORM_SECONDS=${STORM_SECONDS:-60} STORM_RING=${STORM_RING:-32M} \
	"${PYTHON:-python3}" tests/ring/t_ring_lapstorm.py
