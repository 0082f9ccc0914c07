#!/usr/bin/env bash
# One environment table (issue 24, point 4): libanchor.so and the Python
# module's writer read ANCHOR_* variables only through anchors/ring_env.c,
# and every variable of that table is in README's table of variables.
# Then the table at work: a variable the program sets after start-up
# changes nothing in it (read once), and its children see what it exports.
set -uo pipefail
cd "$ANCHOR_ROOT"
T=$ANCHOR_TEST_TMP
fails=0
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# A getenv (or secure_getenv) of an ANCHOR_ name anywhere else.
others=$(grep -rnE '(secure_)?getenv\("ANCHOR' preload python_hooks/src anchors | grep -v '^anchors/ring_env\.c:')
[ -z "$others" ] || bad "ANCHOR_ variables read outside anchors/ring_env.c:"$'\n'"$others"
n=0
for v in $(grep -oE '"ANCHOR_[A-Z_]+"' anchors/ring_env.c | tr -d '"' | sort -u); do
	n=$((n + 1))
	grep -q "^| \`$v[=\`]" README.md || bad "$v is in the table (anchors/ring_env.c) but not in README's variables"
done
[ "$n" -ge 15 ] || bad "only $n variables found in anchors/ring_env.c"
echo "ok   $n variables, all read through anchors/ring_env.c and documented"

# Read once: ANCHOR_DISABLE=1 set by the program after start-up does not
# stop this process (the table read the environment at start); the
# ANCHOR_FILE libanchor exported reaches a child.
cat >"$T/late.py" <<'PY'
import os, subprocess, sys
os.environ["ANCHOR_DISABLE"] = "1"   # too late for this process: it is attached
import anchor
anchor.mark("after-setenv")
print("enabled", anchor.enabled())
out = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('ANCHOR_FILE', ''))"],
                     capture_output=True, text=True).stdout.strip()
print("child sees", "ring" if out.endswith(".ring") else repr(out))
PY
(cd "$T" && env -u ANCHOR_FILE LD_PRELOAD="$BUILD/libanchor.so" "$PYTHON" "$T/late.py") >"$T/late.out" 2>"$T/late.err"
if [ "$(cat "$T/late.out")" = $'enabled True\nchild sees ring' ] && [ ! -s "$T/late.err" ]; then
	ok=$(ls "$T"/anchor-*.ring 2>/dev/null | head -n 1)
	if [ -n "$ok" ] && "$BUILD/anchorpost" dump "$ok" -o - | grep -q ',mark,after-setenv,'; then
		echo "ok   ANCHOR_DISABLE set by the program after start-up: still recording; the child got ANCHOR_FILE"
	else
		bad "the late mark is not in the ring ($ok)"
	fi
else
	bad "late setenv: $(cat "$T/late.out" "$T/late.err")"
fi
echo "failures: $fails"
[ $fails -eq 0 ]
