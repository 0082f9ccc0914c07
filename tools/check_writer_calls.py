#!/usr/bin/env python3
"""check_writer_calls.py - no writer calls attrib/, align/, input/ or anchors/.

The writers (postproc/output/) format what the run model holds: the
attributions, alignments and readings are computed once by the model
(model/results.h) and looked up through it (model/lookup.h).  This checks
the objects, not the includes (tools/check_layers.py does those): every
function an output object calls that one of those layers defines is a
violation, named with the source file and the layer.

Usage: check_writer_calls.py ROOT BUILD [--as-writer OBJ ...]
  BUILD: the build directory (build/, with post/postproc/LAYER/*.o)
  --as-writer OBJ: check OBJ as if it were a writer (the test's plant)
Exit 0: clean; 1: violations listed; 2: objects missing (run make first).
"""
import os
import subprocess
import sys

BARRED = ("attrib", "align", "input")  # and anchors/, built in post/anchors


def symbols(obj, defined):
    args = ["nm", "-g", "--defined-only" if defined else "--undefined-only", obj]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-3])
        return 2
    root, build = argv[1], argv[2]
    extra = argv[argv.index("--as-writer") + 1:] if "--as-writer" in argv else []
    post = os.path.join(build, "post")
    owner = {}
    for layer in BARRED + ("anchors",):
        src = os.path.join(root, "postproc", layer) if layer != "anchors" else os.path.join(root, "anchors")
        objdir = os.path.join(post, "postproc", layer) if layer != "anchors" else os.path.join(post, "anchors")
        for name in sorted(os.listdir(src)):
            if not name.endswith(".c"):
                continue
            obj = os.path.join(objdir, name[:-2] + ".o")
            if not os.path.exists(obj):
                continue  # anchors/ sources of libanchor's writer are built elsewhere
            for sym in symbols(obj, True):
                owner[sym] = layer
    writers = []
    for name in sorted(os.listdir(os.path.join(root, "postproc", "output"))):
        if name.endswith(".c"):
            obj = os.path.join(post, "postproc", "output", name[:-2] + ".o")
            if not os.path.exists(obj):
                print("%s: missing (run make first)" % obj)
                return 2
            writers.append(("postproc/output/" + name, obj))
    writers += [(obj, obj) for obj in extra]
    bad = []
    for src, obj in writers:
        for sym in sorted(symbols(obj, False)):
            if sym in owner:
                bad.append("%s calls %s (%s/): a writer formats the run model's tables "
                           "(model/results.h, model/lookup.h)" % (src, sym, owner[sym]))
    for b in bad:
        print(b)
    print("writer calls: %d violation(s) in %d writer object(s)" % (len(bad), len(writers)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
