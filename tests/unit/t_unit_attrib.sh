#!/usr/bin/env bash
# Known-answer tests of the energy attribution math (postproc/attrib/attrib*.c):
# builds build/test_attrib and runs it; it prints the truth-vs-estimate
# table and exits non-zero when a target is missed.
set -eu
cd "$ANCHOR_ROOT"
B=${BUILD:-$ANCHOR_ROOT/build}
make -s B="$B" "$B/test_attrib"
"$B/test_attrib"
