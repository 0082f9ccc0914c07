#!/usr/bin/env bash
# postproc/'s layers (postproc/README.md): every include names its folder
# and none reaches a layer above its own (tools/check_layers.py).  The
# check must pass on the tree and must fail on a planted upward include, a
# bare include and an unknown folder, each named with file and line.
set -euo pipefail
T=$ANCHOR_TEST_TMP
cd "$ANCHOR_ROOT"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$PYTHON" tools/check_layers.py .) || fail "the tree breaks the layers:"$'\n'"$out"

plant() { # name, file to edit, line to add, expected message
	rm -rf "$T/$1"; mkdir -p "$T/$1"
	cp -r postproc anchors "$T/$1/"
	sed -i "0,/^#include/s||$3\n&|" "$T/$1/$2"
	if got=$("$PYTHON" tools/check_layers.py "$T/$1"); then
		fail "$1: the check passed with '$3' in $2"
	fi
	grep -qF "$4" <<<"$got" || fail "$1: expected '$4', got:"$'\n'"$got"
}
plant upward postproc/util/diag.h '#include "output/outfile.h"' 'postproc/util/diag.h:'
plant upward2 postproc/attrib/attrib.h '#include "model/run_model.h"' 'model/ is above attrib/'
plant bare postproc/align/align.c '#include "phase_set.h"' 'name the header'"'"'s folder'
plant nosuch postproc/input/perun_load.c '#include "input/no_such.h"' 'no such header'
mkdir -p "$T/folder/postproc/extra"; cp -r postproc anchors "$T/folder/"; mkdir -p "$T/folder/postproc/extra"
touch "$T/folder/postproc/extra/x.c"
if "$PYTHON" tools/check_layers.py "$T/folder" >"$T/folder.out"; then fail "a folder outside the layers passed"; fi
grep -q "postproc/extra/: a folder that is no layer" "$T/folder.out" || fail "unknown folder: $(cat "$T/folder.out")"
echo "ok: $(tail -n 1 <<<"$out"); planted upward, bare, missing and unknown-folder includes are caught"
