#!/usr/bin/env python3
"""check_layers.py - postproc/'s include rule (postproc/README.md).

Every #include "..." in postproc/ names its folder ("model/run_model.h",
"anchors/ring_reader.h"), and no file includes a header of a layer above its
own.  The layers, lowest first, and what each may see:

    anchors  the ring format and reader (the project's own library)
    util     diagnostics and tunables
    attrib   attribution maths: arrays in, numbers out
    input    readers of the files (ring, perun HDF5, py-spy profiles)
    phase    what the ring says happened when (phases per thread)
    align    clocks: perun's and py-spy's times on the ring's timeline
    model    the run model: inputs loaded, aligned, attributed
    output   writers: tables, CSV, pictures, trace.json
    cmd      one file per subcommand, options, exit codes

A file may include headers of its own layer or any layer below it, with
one exception: output/ (the writers) sees only model/, phase/, util/ and its
own headers.  The writers format what the run model holds (issue 27: the
results stage attributes once, every writer reads its tables), so a writer
that includes attrib/, align/, input/ or anchors/ is about to compute,
align or read on its own.  tools/check_writer_calls.py checks the same on
the objects: no writer calls a function of those layers.
Usage: check_layers.py [ROOT]   (exit 0: clean, 1: violations listed)
"""
import os
import re
import sys

ORDER = ["anchors", "util", "attrib", "input", "phase", "align", "model", "output", "cmd"]
# The generated version header is read by --version and `info` only.  It
# is an installed header (include/, not a layer of postproc), included by
# its bare name as a user of the C API writes it.
EXTRA = {"anchor_version.h": "cmd"}
# Layers a writer may not include (the model re-exports what it needs:
# model/lookup.h, model/results.h).
WRITER_BARRED = ("attrib", "align", "input", "anchors")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    post = os.path.join(root, "postproc")
    bad = []
    for layer in sorted(os.listdir(post)):
        d = os.path.join(post, layer)
        if not os.path.isdir(d):
            continue
        if layer not in ORDER:
            bad.append("postproc/%s/: a folder that is no layer (add it to postproc/README.md and %s)" %
                       (layer, os.path.basename(__file__)))
            continue
        rank = ORDER.index(layer)
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            rel = "postproc/%s/%s" % (layer, name)
            text = open(os.path.join(d, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = "%s:%d: #include \"%s\"" % (rel, line, inc)
                if inc in EXTRA:
                    if rank < ORDER.index(EXTRA[inc]):
                        bad.append("%s: only %s/ may include it" % (where, EXTRA[inc]))
                    continue
                if "/" not in inc:
                    bad.append("%s: name the header's folder" % where)
                    continue
                top = inc.split("/", 1)[0]
                if top not in ORDER:
                    bad.append("%s: not a header of postproc/ or anchors/" % where)
                    continue
                path = os.path.join(root, inc) if top == "anchors" else os.path.join(post, inc)
                if not os.path.exists(path):
                    bad.append("%s: no such header" % where)
                elif ORDER.index(top) > rank:
                    bad.append("%s: %s/ is above %s/ (layers, lowest first: %s)" %
                               (where, top, layer, " < ".join(ORDER)))
                elif layer == "output" and top in WRITER_BARRED:
                    bad.append("%s: a writer includes %s/ (output/ formats the run model's tables: "
                               "model/results.h, model/lookup.h)" % (where, top))
    for b in bad:
        print(b)
    print("layers: %d violation(s)" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
