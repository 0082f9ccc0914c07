#!/usr/bin/env bash
# make install PREFIX=... DESTDIR=...: library, header, CLI and the Python
# auto-mode directory land there, and a C program built against the
# installed header and library records its marks.
set -euo pipefail
T=$ANCHOR_TEST_TMP
cd "$ANCHOR_ROOT"
make -s install PREFIX=/opt/anchor DESTDIR="$T/root" >/dev/null
P=$T/root/opt/anchor
for f in lib/libanchor.so include/anchor.h bin/anchorpost lib/anchor/python/sitecustomize.py; do
	[ -e "$P/$f" ] || { echo "missing $f"; exit 1; }
done
ls "$P"/lib/anchor/python/anchor/_anchor*.so >/dev/null
cat >"$T/app.c" <<'C'
#include <anchor.h>
int main(void) { anchor_begin("work"); anchor_mark_value("step", 7); anchor_end("work"); return anchor_enabled() ? 0 : 3; }
C
cc -std=c11 -I"$P/include" -o "$T/app" "$T/app.c" -L"$P/lib" -lanchor -Wl,-rpath,"$P/lib"
ANCHOR_FILE=$T/app.ring "$T/app"
"$P/bin/anchorpost" dump "$T/app.ring" -o "$T/app.csv"
grep -q ',begin,work,' "$T/app.csv"
grep -q ',mark,step,7,' "$T/app.csv"
grep -q ',end,work,' "$T/app.csv"
# ANCHOR_DISABLE: the same program runs, nothing attached, no file made.
ANCHOR_DISABLE=1 ANCHOR_FILE=$T/none.ring "$T/app" && { echo "anchor_enabled() was true with ANCHOR_DISABLE=1"; exit 1; } || [ $? -eq 3 ]
[ ! -e "$T/none.ring" ]
echo "ok: installed tree works"
