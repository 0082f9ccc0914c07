#!/usr/bin/env bash
# scripts/demo.sh - the one-command demo (the README's first command): on a
# fresh machine, install what is missing, build, record a real PyTorch
# transformer training run under perun + py-spy + libanchor, and report
# per-phase energy: the table, the pictures, the trace, the file list.
#
#   bash scripts/demo.sh
#
# Environment:
#   DEMO_OUT=out/demo    where the recording and the report go (replaced)
#   DEMO_STEPS=N         shorten: one epoch of N steps (default: the
#                        example's 3 epochs x 50 steps, about three minutes on 2 cores)
#   DEMO_ARGS="..."      more examples/transformer.py options
#   DEMO_SKIP_SETUP=1    skip install-deps and make (tests)
#   PYTHON, BUILD        interpreter and build directory
# Without RAPL or a GPU, perun reads an emulated sensor and every output
# says "emulated sensor, not a measurement".
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${DEMO_OUT:-out/demo}
BUILD=${BUILD:-build}
PY=${PYTHON:-python3}

if [ -z "${DEMO_SKIP_SETUP:-}" ]; then
	echo "demo: installing what is missing (scripts/install-deps.sh)" >&2
	bash scripts/install-deps.sh
	echo "demo: building" >&2
	make -j"$(nproc)" >/dev/null
fi
# The anchor module the example imports (built by make).
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}

args=()
if [ -n "${DEMO_STEPS:-}" ]; then
	args+=(--epochs 1 --steps "$DEMO_STEPS")
fi
# shellcheck disable=SC2206 # DEMO_ARGS is a list of options on purpose
args+=(${DEMO_ARGS:-})

if [ -e "$OUT" ]; then
	echo "demo: replacing the previous $OUT" >&2
	rm -rf "$OUT"
fi
mkdir -p "$(dirname "$OUT")"
echo "demo: recording examples/transformer.py ${args[*]} into $OUT" >&2
"$BUILD/anchorpost" record -o "$OUT" -- "$PY" examples/transformer.py "${args[@]}" >&2

# `report RUN_DIR` finds the ring, perun's file and the profile that
# `record` wrote there (the user's own runs work the same way).
echo "demo: anchorpost report $OUT -d $OUT" >&2
"$BUILD/anchorpost" report "$OUT" -d "$OUT" --title "examples/transformer.py ($OUT)"
