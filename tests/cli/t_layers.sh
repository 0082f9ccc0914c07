#!/usr/bin/env bash
# postproc/'s layers (postproc/README.md): every include names its folder
# and none reaches a layer above its own (tools/check_layers.py), and the
# writers (output/) include no attrib/, align/, input/ or anchors/ header
# and call none of their functions (tools/check_writer_calls.py on the
# built objects: they format the results stage's tables, issue 27).  Both
# checks must pass on the tree and fail on a plant: an upward include, a
# bare include, an unknown folder, a writer's include of input/ and of
# anchors/, a writer object that calls pyspy_read and ring_procs_find.
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
plant writer postproc/output/phase_table.c '#include "attrib/attrib.h"' 'postproc/output/phase_table.c:'
plant writer2 postproc/output/trace_json.h '#include "anchors/ring_format.h"' 'a writer includes anchors/'
plant writer3 postproc/output/csv.c '#include "input/pyspy.h"' 'a writer includes input/'
mkdir -p "$T/folder/postproc/extra"; cp -r postproc anchors "$T/folder/"; mkdir -p "$T/folder/postproc/extra"
touch "$T/folder/postproc/extra/x.c"
if "$PYTHON" tools/check_layers.py "$T/folder" >"$T/folder.out"; then fail "a folder outside the layers passed"; fi
grep -q "postproc/extra/: a folder that is no layer" "$T/folder.out" || fail "unknown folder: $(cat "$T/folder.out")"

# The writers' calls, on the objects make built.
calls=$("$PYTHON" tools/check_writer_calls.py . "$BUILD") || fail "a writer calls a lower layer:"$'\n'"$calls"
cat >"$T/plant_writer.c" <<'C'
#include "input/pyspy.h"
#include "anchors/ring_procs.h"
int plant_writer(const char *in, struct pyspy_profile *p, const struct ring_procs *t)
{
	return pyspy_read(in, PYSPY_FMT_AUTO, p, NULL, NULL, NULL) + (ring_procs_find(t, 1) != NULL);
}
C
cc -std=c11 -D_GNU_SOURCE -I. -Ipostproc -c "$T/plant_writer.c" -o "$T/plant_writer.o" || fail "building the plant"
if got=$("$PYTHON" tools/check_writer_calls.py . "$BUILD" --as-writer "$T/plant_writer.o"); then
	fail "a writer object calling pyspy_read and ring_procs_find passed:"$'\n'"$got"
fi
grep -q "plant_writer.o calls pyspy_read (input/)" <<<"$got" || fail "pyspy_read not named:"$'\n'"$got"
grep -q "plant_writer.o calls ring_procs_find (anchors/)" <<<"$got" || fail "ring_procs_find not named:"$'\n'"$got"
echo "ok: $(tail -n 1 <<<"$out"); $(tail -n 1 <<<"$calls"); planted upward, bare, missing and unknown-folder" \
	"includes, writers' includes of attrib/, anchors/ and input/, and a writer's calls are caught"
