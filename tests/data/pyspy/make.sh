#!/usr/bin/env bash
# tests/data/pyspy/make.sh - regenerate the py-spy fixtures in this folder:
# real `py-spy record` runs of victim.py, one per output format.
# Run from anywhere: bash tests/data/pyspy/make.sh  (writes into this folder).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
PY=$("$PY" -c 'import sys; print(sys.executable)')   # not a pyenv shim
cd "$HERE"
# 50 Hz (chrometrace 20 Hz: one JSON event per sample) keeps the files small; --idle keeps the sleeping thread's samples
py-spy record --rate 50 --idle --threads --format speedscope -o victim.speedscope.json -- "$PY" victim.py
py-spy record --rate 20 --format chrometrace -o victim.chrometrace.json -- "$PY" victim.py
py-spy record --rate 50 --threads --format raw -o victim.raw.txt -- "$PY" victim.py
py-spy --version
ls -l "$HERE"
