#!/usr/bin/env bash
# tests/data/perun/make.sh - regenerate the perun fixtures in this folder
# with the installed perun (real `perun monitor` runs; RAPL and NVML through
# the emulator in tools/emulated_power, see docs/perun-emulation.md).
# Run from anywhere: bash tests/data/perun/make.sh  (writes into this folder).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/perun-fixtures.XXXXXX)
trap 'rm -rf "$W"' EXIT
cp "$HERE/toy_app.py" "$HERE/toy_mpi.py" "$W/"
cd "$W"

# 1. psutil sensors only (this machine has no RAPL and no GPU), regions
"$PY" -m perun monitor --sampling_period 0.2 --data_out "$W/psutil" toy_app.py >/dev/null
cp "$W/psutil/toy_app.hdf5" "$HERE/psutil_only_regions.hdf5"
"$PY" -m perun export "$HERE/psutil_only_regions.hdf5" csv >/dev/null
mv "$HERE"/toy_app_*.csv "$HERE/psutil_only_regions.export.csv"

# 2. emulated RAPL (package, dram) + one emulated NVML GPU at constant powers
#    (cpu model with 0 W per core: package 60 W, dram 8 W, GPU 150 W); perun
#    starts only once the updater ticks, so its first sample already reads them.
export PYTHONPATH="$ROOT/tools/emulated_power${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -m anchor_emul.updater --powercap "$W/pc" --init --gpu
sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$@"' "$W/ready" \
	"$PY" -m anchor_emul.perun --powercap "$W/pc" monitor --sampling_period 0.2 \
	--data_out "$W/emul" toy_app.py >/dev/null &
app=$!
"$PY" -m anchor_emul.updater --powercap "$W/pc" --model cpu --watch-pid $app --ready-file "$W/ready" \
	--idle-w 60 --w-per-core 0 --dram-idle-w 8 --dram-w-per-core 0 --gpu-idle-w 150 \
	--truth "$W/truth.json"
wait $app
cp "$W/emul/toy_app.hdf5" "$HERE/emulated_rapl_nvml.hdf5"

# 3. two MPI ranks on one host, psutil sensors, regions on both ranks
mpirun -np 2 --oversubscribe --allow-run-as-root "$PY" -m perun monitor --sampling_period 0.2 \
	--data_out "$W/mpi" toy_mpi.py >/dev/null
cp "$W/mpi/toy_mpi.hdf5" "$HERE/mpi_2ranks.hdf5"
"$PY" -m perun --version
ls -l "$HERE"
