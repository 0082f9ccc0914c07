#!/usr/bin/env bash
# `anchorpost record -- PY script.py` with an interpreter that cannot
# import perun stops before anything starts, with one line saying so
# (issue 22: with python3.9 it ended in anchor_emul.perun's traceback, and
# py-spy's "No python processes found"): a real venv of $PYTHON without
# perun, and a pyenv CPython < 3.10 where there is one (perun 1.0.0 needs
# 3.10: the line says that and points to py-spy alone).
set -uo pipefail
T=$ANCHOR_TEST_TMP
fail() { echo "FAIL: $*"; exit 1; }
cd "$T"
printf 'import anchor\nwith anchor.phase("x"):\n    pass\n' >app.py

"$PYTHON" -m venv --without-pip "$T/v" || fail "venv"
err=$("$BUILD/anchorpost" record -d out1 -- "$T/v/bin/python" app.py 2>&1); rc=$?
[ $rc -eq 1 ] || fail "venv: exit $rc, want 1: $err"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "venv: more than one line: $err"
[[ $err == "anchorpost: $T/v/bin/python: cannot import perun (Python 3."*"-m pip install perun==1.0.0"* ]] ||
	fail "venv: $err"
[ ! -e out1 ] || fail "venv: record created its directory before failing"
echo "ok venv: $err"

old=
for py in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
	[ -x "$py" ] && "$py" -c 'import sys; sys.exit(not (3, 8) <= sys.version_info < (3, 10))' 2>/dev/null &&
		! "$py" -c 'import perun.monitoring.subprocess' 2>/dev/null && old=$py && break
done
if [ -n "$old" ]; then
	err=$("$BUILD/anchorpost" record -d out2 -- "$old" app.py 2>&1); rc=$?
	[ $rc -eq 1 ] || fail "$old: exit $rc: $err"
	[[ $err == *"cannot import perun, and perun 1.0.0 requires Python >= 3.10 (this is 3."*"py-spy alone"* ]] ||
		fail "$old: $err"
	echo "ok $old: $err"
else
	echo "note: no pyenv CPython 3.8/3.9 without perun here: the version line not checked"
fi
echo PASS
