#!/usr/bin/env bash
# tests/data/perun/make_old.sh - regenerate perun070_sampling_rate.hdf5: a
# real file of an older perun, written with its own spelling of the
# sampling period (`--sampling_rate`, renamed `--sampling_period` in 0.8).
# perun 0.7.0 is installed into a temporary directory only (pip --target,
# no dependencies: it runs on the h5py, numpy, psutil and py-cpuinfo that
# perun 1.0 installed), never over the installed perun.
# Run from anywhere: bash tests/data/perun/make_old.sh  (needs the network).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/perun-old.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$PY" -m pip download --quiet --no-deps -d "$W/dl" perun==0.7.0
"$PY" -m pip install --quiet --no-deps --target "$W/p07" "$W"/dl/perun-0.7.0-*.whl
cp "$HERE/toy_app.py" "$W/"
cd "$W"
PYTHONPATH="$W/p07" "$PY" -m perun --version
PYTHONPATH="$W/p07" "$PY" -m perun monitor --sampling_rate 0.5 --format hdf5 --data_out "$W/out" toy_app.py >/dev/null
cp "$W/out/toy_app.hdf5" "$HERE/perun070_sampling_rate.hdf5"
ls -l "$HERE/perun070_sampling_rate.hdf5"
