#!/usr/bin/env bash
# The option parser on its own (postproc/cmd/options.c): builds
# build/test_options and runs it.
set -eu
cd "$ANCHOR_ROOT"
B=${BUILD:-$ANCHOR_ROOT/build}
make -s B="$B" "$B/test_options"
"$B/test_options"
