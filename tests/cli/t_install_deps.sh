#!/usr/bin/env bash
# scripts/install-deps.sh keeps what the user has and pins what it adds
# (issue 22): real venvs of $PYTHON whose `pip` is a stand-in that logs
# its arguments (and the constraint file it is given) instead of
# downloading, and whose "installed" packages are real importable modules
# with a __version__.  Checked:
#   1. torch 2.4.1 present: kept and said so, never in a pip line; the ML
#      stack is held to torch==2.4.1; perun==1.0.0 and py-spy 0.4.x pinned;
#   2. no torch: torch==2.13.0 installed, the ML stack held to it;
#   3. everything present (torch 2.13.0, perun 1.0.0, py-spy 0.4.3): pip is
#      not run at all (idempotent); perun 0.9.0 instead is kept, with a note;
#   4. a pyenv CPython >= 3.10 without perun gets perun==1.0.0, binary only;
#   5. Debian's /usr/bin/python3 (PEP 668, EXTERNALLY-MANAGED): exit 3 with
#      the venv recipe before any pip runs (skipped where no such Python).
set -uo pipefail
T=$ANCHOR_TEST_TMP
cd "$ANCHOR_ROOT"
fail() { echo "FAIL: $*"; exit 1; }

mkvenv() { # DIR: a venv whose pip logs to $DIR.pip.log
	"$PYTHON" -m venv --without-pip "$1" || fail "venv $1"
	site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
	mkdir -p "$site/pip"
	: >"$site/pip/__init__.py"
	cat >"$site/pip/__main__.py" <<PY
import sys
args = sys.argv[1:]
if args[:1] == ["show"]:
    sys.exit(1)  # nothing is installed as a distribution here
with open("$1.pip.log", "a") as f:
    f.write(" ".join(args) + "\n")
    if "-c" in args:
        f.write("constraint " + open(args[args.index("-c") + 1]).read().strip() + "\n")
PY
	echo "$site"
}
fake() { # SITE MODULE VERSION: an importable module with __version__
	mkdir -p "$1/${2//.//}"
	echo "__version__ = '$3'" >"$1/${2//.//}/__init__.py"
}
deps() { # PYTHON [PATH]: run install-deps without apt and without pyenv
	PATH=${2:-/usr/bin:/bin} INSTALL_DEPS_APT=0 PYENV_ROOT=${PYENV_FAKE:-$T/no-pyenv} PYTHON=$1 \
		bash scripts/install-deps.sh
}

# 1. The user's torch 2.4.1.
s=$(mkvenv "$T/v1"); fake "$s" torch 2.4.1
err=$(deps "$T/v1/bin/python" 2>&1) || fail "1: exit $?: $err"
log=$(cat "$T/v1.pip.log")
[[ $err == *"torch 2.4.1 is installed: kept, not replaced (the tests cover 2.13.0)"* ]] || fail "1: no note: $err"
grep -Eq '(^| )torch(==| |$)' <<<"$(grep '^install' "$T/v1.pip.log")" && fail "1: pip was asked for torch: $log"
grep -q '^install -q .*perun==1.0.0' <<<"$log" || fail "1: perun not pinned: $log"
grep -q '^install -q .*py-spy>=0.4,<0.5' <<<"$log" || fail "1: py-spy not pinned: $log"
grep -qx 'constraint torch==2.4.1' <<<"$log" || fail "1: the ML stack is not held to the user's torch: $log"
echo "ok 1: torch 2.4.1 kept; pip: $(grep -c '^install' <<<"$log") install line(s), perun==1.0.0, py-spy 0.4.x"

# 2. No torch.
mkvenv "$T/v2" >/dev/null
deps "$T/v2/bin/python" >/dev/null 2>&1 || fail "2: exit $?"
log=$(cat "$T/v2.pip.log")
grep -q '^install -q .*torch==2.13.0' <<<"$log" || fail "2: torch==2.13.0 not installed: $log"
grep -qx 'constraint torch==2.13.0' <<<"$log" || fail "2: the ML stack not held to 2.13.0: $log"
echo "ok 2: no torch: torch==2.13.0"

# 3. Everything there: no pip at all; then an older perun is kept.
s=$(mkvenv "$T/v3")
fake "$s" torch 2.13.0+cpu; fake "$s" perun 1.0.0; fake "$s" perun.monitoring 1.0.0
for m in numpy h5py mpi4py viztracer lightning transformers accelerate nvtx; do fake "$s" $m 1; done
mkdir -p "$T/bin"
printf '#!/bin/sh\necho "py-spy 0.4.3"\n' >"$T/bin/py-spy"
chmod +x "$T/bin/py-spy"
err=$(deps "$T/v3/bin/python" "$T/bin:/usr/bin:/bin" 2>&1) || fail "3: exit $?: $err"
[ ! -e "$T/v3.pip.log" ] || fail "3: pip ran although all is there: $(cat "$T/v3.pip.log")"
[ -z "$err" ] || fail "3: said something although all is there: $err"
fake "$s" perun 0.9.0
err=$(deps "$T/v3/bin/python" "$T/bin:/usr/bin:/bin" 2>&1) || fail "3b: exit $?"
[[ $err == *"perun 0.9.0 is installed: kept (the tests cover 1.0.0)"* ]] || fail "3b: no note: $err"
[ ! -e "$T/v3.pip.log" ] || fail "3b: pip ran: $(cat "$T/v3.pip.log")"
echo "ok 3: nothing to do: no pip; perun 0.9.0 kept with a note"

# 4. A pyenv CPython >= 3.10 without perun (v2 stands in for it).
mkdir -p "$T/pyenv/versions/3.x/bin"
# A wrapper, not a symlink: a venv is found from the path it was started as.
printf '#!/bin/sh\nexec "%s" "$@"\n' "$T/v2/bin/python" >"$T/pyenv/versions/3.x/bin/python3"
chmod +x "$T/pyenv/versions/3.x/bin/python3"
rm -f "$T/v2.pip.log"
PYENV_FAKE=$T/pyenv deps "$T/v3/bin/python" "$T/bin:/usr/bin:/bin" >/dev/null 2>&1 || fail "4: exit $?"
grep -qx 'install -q --only-binary :all: perun==1.0.0 h5py numpy' "$T/v2.pip.log" ||
	fail "4: the pyenv CPython did not get perun 1.0.0: $(cat "$T/v2.pip.log" 2>/dev/null)"
echo "ok 4: pyenv CPython: perun==1.0.0, binary wheels only"

# 5. PEP 668.
sys=/usr/bin/python3
if [ -x $sys ] && $sys -c 'import os, sys, sysconfig
sys.exit(not (os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) and sys.prefix == sys.base_prefix))' &&
	! $sys -c 'import torch' 2>/dev/null; then
	err=$(deps $sys 2>&1); rc=$?
	[ $rc -eq 3 ] || fail "5: exit $rc, want 3: $err"
	[[ $err == *"is externally managed (PEP 668"* && $err == *"python3 -m venv .venv && . .venv/bin/activate"* ]] ||
		fail "5: unclear message: $err"
	[[ $err != *"pip install"* ]] || fail "5: pip was run: $err"
	echo "ok 5: $sys externally managed: exit 3, venv recipe, no pip"
else
	echo "note 5: no externally-managed /usr/bin/python3 without torch here: PEP 668 case not run"
fi
echo "PASS"
