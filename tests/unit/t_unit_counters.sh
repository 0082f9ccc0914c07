#!/usr/bin/env bash
# Known-answer tests of issue 14's attribution pieces (tests/unit/test_counters.c):
# ms energy counters split at phase edges, and the forward model for power
# readings that average over a window.  Synthetic and exact.
set -eu
cd "$ANCHOR_ROOT"
B=${BUILD:-$ANCHOR_ROOT/build}
make -s B="$B" "$B/test_counters"
"$B/test_counters"
