#!/usr/bin/env bash
# One version, from the file VERSION: anchorpost --version and -V,
# anchor_version.h (included by anchor.h), anchor.__version__, the
# distribution version setuptools reads (pyproject: dynamic, file VERSION),
# and the writer version in the header of a ring each writer creates
# (libanchor.so, the Python module's own writer), as `info` shows it.
set -euo pipefail
T=$ANCHOR_TEST_TMP
cd "$ANCHOR_ROOT"
fail() { echo "FAIL: $*"; exit 1; }
V=$(cat VERSION)
[[ $V =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "VERSION is not MAJOR.MINOR.PATCH: $V"
IFS=. read -r MA MI PA <<<"$V"

for opt in --version -V; do
	out=$("$BUILD/anchorpost" $opt) || fail "anchorpost $opt exited $?"
	[[ $out == "anchorpost $V (ring format "* ]] || fail "anchorpost $opt: $out"
done
for m in "VERSION \"$V\"" "VERSION_MAJOR $MA" "VERSION_MINOR $MI" "VERSION_PATCH $PA"; do
	grep -q "^#define ANCHOR_$m\$" include/anchor_version.h || fail "anchor_version.h lacks ANCHOR_$m"
done
grep -q '#include "anchor_version.h"' include/anchor.h || fail "anchor.h does not include anchor_version.h"
grep -q 'version = { file = "VERSION" }' pyproject.toml || fail "pyproject does not read VERSION"
# The version header is public (include/, installed beside anchor.h): the
# ring writer, the Python module and anchorpost build without preload/ on
# their include path (issue 24: they depended on the preload part).
for f in anchors/ring_writer.c python_hooks/src/module.c postproc/cmd/main.c; do
	cc -std=c11 -D_GNU_SOURCE -I. -Iinclude -Ianchors -Ipostproc -Ipython_hooks/src \
		$("$PYTHON" -c 'import sysconfig; print("-I" + sysconfig.get_paths()["include"])') \
		$(pkg-config --cflags hdf5 libcjson yajl cairo 2>/dev/null) -fsyntax-only "$f" ||
		fail "$f does not build without -Ipreload"
done

py=$("$PYTHON" -c 'import anchor; print(anchor.__version__)')
[ "$py" = "$V" ] || fail "anchor.__version__ $py != $V"

# The writer's version in the header of rings made by each writer.
ANCHOR_FILE=$T/c.ring LD_PRELOAD=$BUILD/libanchor.so /bin/true
(cd "$T" && env -u ANCHOR_FILE -u LD_PRELOAD "$PYTHON" -c 'import anchor; anchor.mark("x"); print(anchor.ring_path())' >"$T/py.path")
for ring in "$T/c.ring" "$(cat "$T/py.path")"; do
	"$BUILD/anchorpost" info "$ring" | grep -qx "writer     anchor $V" || fail "$ring: info shows no writer $V"
done
echo "ok: version $V everywhere (anchorpost --version/-V, anchor_version.h, anchor.__version__, pyproject, ring headers)"
