#!/usr/bin/env bash
# make install / make uninstall, and the quick start from the installed tree:
#  1. PREFIX=P (no DESTDIR): a tiny PyTorch script with `import anchor` runs
#     under the installed libanchor.so with no PYTHONPATH, from another
#     directory; the installed anchorpost records it (perun + py-spy +
#     libanchor from the prefix, emulated sensor) and `phases` attributes it;
#     --version, info's writer version, anchor.__version__ and anchor.h's
#     ANCHOR_VERSION all equal the file VERSION; a C program built through
#     pkg-config (the installed anchor.pc) links -lanchor and records; the
#     man pages render; the soname is libanchor.so.MAJOR.
#  2. PREFIX=/opt/anchor DESTDIR=D: the same files under D; `make
#     uninstall` with the same variables leaves D empty, and the live
#     prefix of 1 without a file.
set -euo pipefail
T=$ANCHOR_TEST_TMP
cd "$ANCHOR_ROOT"
fail() { echo "FAIL: $*"; exit 1; }
VERSION=$(cat VERSION)
MAJOR=${VERSION%%.*}
PYREAL=$("$PYTHON" -c 'import sys; print(sys.executable)')

P=$T/prefix
make -s install PREFIX="$P" PYTHON="$PYREAL" >/dev/null
for f in bin/anchorpost lib/libanchor.so "lib/libanchor.so.$MAJOR" "lib/libanchor.so.$VERSION" include/anchor.h \
	include/anchor_version.h lib/pkgconfig/anchor.pc share/man/man1/anchorpost.1 share/man/man3/libanchor.3 \
	lib/anchor/python/sitecustomize.py share/anchor/emulated_power/anchor_emul/perun.py; do
	[ -e "$P/$f" ] || fail "missing $f"
done
ls "$P"/lib/anchor/python/anchor/_anchor*.so >/dev/null
readelf -d "$P/lib/libanchor.so.$VERSION" | grep -q "SONAME.*\[libanchor.so.$MAJOR\]" || fail "soname is not libanchor.so.$MAJOR"

# Versions: one source of truth.
[ "$("$P/bin/anchorpost" --version)" = "$("$P/bin/anchorpost" -V)" ] || fail "-V differs from --version"
"$P/bin/anchorpost" --version | grep -q "^anchorpost $VERSION " || fail "anchorpost --version: $("$P/bin/anchorpost" --version)"
grep -q "#define ANCHOR_VERSION \"$VERSION\"" "$P/include/anchor_version.h" || fail "anchor_version.h"

# The promised path: LD_PRELOAD + import anchor, no PYTHONPATH, another cwd.
mkdir -p "$T/elsewhere"
cat >"$T/tiny.py" <<'PY'
import sys
import anchor
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(512, 64), torch.randn(512, 1)
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    with anchor.phase("fwd"):
        loss = torch.nn.functional.mse_loss(model(x), y)
    with anchor.phase("bwd"):
        opt.zero_grad()
        loss.backward()
    with anchor.phase("opt"):
        opt.step()
print(anchor.__version__, anchor.__file__, anchor.preloaded())
PY
out=$(cd "$T/elsewhere" && env -u PYTHONPATH ANCHOR_FILE="$T/pre.ring" LD_PRELOAD="$P/lib/libanchor.so" \
	"$PYREAL" "$T/tiny.py" 3) || fail "LD_PRELOAD=PREFIX/lib/libanchor.so python tiny.py failed"
[ "$out" = "$VERSION $P/lib/anchor/python/anchor/__init__.py True" ] || fail "import under preload: $out"
"$P/bin/anchorpost" info "$T/pre.ring" | grep -q "^writer     anchor $VERSION\$" || fail "info shows no writer version"
[ "$("$P/bin/anchorpost" dump "$T/pre.ring" | grep -c ',begin,fwd,')" = 3 ] || fail "3 fwd ranges expected"
echo "ok: LD_PRELOAD=PREFIX/lib/libanchor.so + import anchor, no PYTHONPATH; versions agree ($VERSION)"

# The quick start with the installed anchorpost: record, then phases.
(cd "$T/elsewhere" && env -u PYTHONPATH "$P/bin/anchorpost" record -o "$T/run" --rate 50 --sampling-period 0.1 \
	--sensor emulated -- "$PYREAL" "$T/tiny.py" 60 >"$T/record.out") || { cat "$T/record.out"; fail "record"; }
"$P/bin/anchorpost" phases --ring "$T/run/run.ring" --perun "$T/run/perun/tiny.hdf5" -o "$T/phases.csv" >"$T/phases.out" \
	|| fail "phases"
"$PYREAL" - "$T/phases.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["scope"] == "all"]
for ph in ("fwd", "bwd", "opt"):
    got = [r for r in rows if r["phase"] == ph]
    assert got and all(r["count"] == "60" for r in got), (ph, [r["count"] for r in got])
assert all(r["alignment"] == "perun-hook" for r in rows), {r["alignment"] for r in rows}
PY
echo "ok: installed anchorpost record + phases (60 x fwd/bwd/opt, alignment perun-hook)"

# C API through pkg-config.
cat >"$T/app.c" <<'C'
#include <anchor.h>
#include <stdio.h>
int main(void)
{
	anchor_begin("work"); anchor_mark_value("step", 7); anchor_end("work");
	printf("%s %d\n", ANCHOR_VERSION, ANCHOR_VERSION_MAJOR);
	return anchor_enabled() ? 0 : 3;
}
C
export PKG_CONFIG_PATH=$P/lib/pkgconfig
[ "$(pkg-config --modversion anchor)" = "$VERSION" ] || fail "pkg-config --modversion"
[ "$(pkg-config --cflags anchor | xargs)" = "-I$P/include" ] || fail "pkg-config --cflags: $(pkg-config --cflags anchor)"
pkg-config --libs anchor | grep -q -- "-L$P/lib -lanchor" || fail "pkg-config --libs: $(pkg-config --libs anchor)"
# shellcheck disable=SC2046
cc -std=c11 -o "$T/app" "$T/app.c" $(pkg-config --cflags --libs anchor) -Wl,-rpath,"$P/lib"
readelf -d "$T/app" | grep -q "NEEDED.*\[libanchor.so.$MAJOR\]" || fail "app does not need libanchor.so.$MAJOR"
[ "$(ANCHOR_FILE=$T/app.ring "$T/app")" = "$VERSION $MAJOR" ] || fail "app output"
"$P/bin/anchorpost" dump "$T/app.ring" -o "$T/app.csv"
grep -q ',mark,step,7,' "$T/app.csv" || fail "app's mark missing"
ANCHOR_DISABLE=1 ANCHOR_FILE=$T/none.ring "$T/app" >/dev/null && fail "anchor_enabled() true with ANCHOR_DISABLE=1" || [ $? -eq 3 ]
[ ! -e "$T/none.ring" ]
echo "ok: pkg-config anchor ($VERSION): C program links -lanchor (libanchor.so.$MAJOR) and records"

# Man pages render, with the version filled in.
for m in share/man/man1/anchorpost.1 share/man/man3/libanchor.3; do
	r=$(MANWIDTH=80 man -l "$P/$m" 2>"$T/man.err") || fail "man -l $m"
	[ ! -s "$T/man.err" ] || fail "man -l $m: $(cat "$T/man.err")"
	echo "$r" | grep -q "anchor $VERSION" || fail "$m: no version"
	echo "$r" | grep -q "@" && fail "$m: unexpanded @...@"
done
echo "ok: man -l renders anchorpost(1) and libanchor(3)"

# Bash completion from the option tables, installed where bash-completion looks.
c=$P/share/bash-completion/completions/anchorpost
[ -s "$c" ] || fail "no bash completion at $c"
bash -n "$c" || fail "completion script: syntax"
grep -q -- '--profile' "$c" || fail "completion lacks --profile"
echo "ok: bash completion installed"

# Python through the prefix's site-packages: anchor.pth adds the package.
site=$("$PYREAL" -c 'import sysconfig,sys;print(sysconfig.get_path("platlib",vars={"base":sys.argv[1],"platbase":sys.argv[1]}))' "$P")
[ -f "$site/anchor.pth" ] || fail "no anchor.pth in $site"
got=$(cd "$T/elsewhere" && env -u PYTHONPATH "$PYREAL" -c "import site; site.addsitedir('$site'); import anchor; print(anchor.__file__)")
[ "$got" = "$P/lib/anchor/python/anchor/__init__.py" ] || fail "anchor.pth: $got"
echo "ok: anchor.pth in the prefix's site-packages makes anchor importable"

# DESTDIR staging, then uninstall leaves nothing.
S=$T/stage
make -s install PREFIX=/opt/anchor DESTDIR="$S" PYTHON="$PYREAL" >/dev/null
n=$(find "$S" -type f -o -type l | wc -l)
[ "$n" -ge 20 ] || fail "DESTDIR install: only $n files"
[ -L "$S/opt/anchor/lib/libanchor.so" ] && [ -L "$S/opt/anchor/lib/libanchor.so.$MAJOR" ] || fail "symlinks"
grep -q '^prefix=/opt/anchor$' "$S/opt/anchor/lib/pkgconfig/anchor.pc" || fail "anchor.pc prefix under DESTDIR"
make -s uninstall PREFIX=/opt/anchor DESTDIR="$S" PYTHON="$PYREAL" >/dev/null
left=$(find "$S" -mindepth 1)
[ -z "$left" ] || fail "uninstall under DESTDIR left: $left"
make -s uninstall PREFIX="$P" PYTHON="$PYREAL" >/dev/null
left=$(find "$P" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"
echo "ok: DESTDIR install of $n files; make uninstall leaves nothing (no file; under DESTDIR no directory either)"
