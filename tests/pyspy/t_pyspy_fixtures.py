"""Every real py-spy speedscope fixture (tests/data/pyspy, and ../shared's
when present) round-trips through `anchorpost
samples`: per-thread sample counts, total weight, leaf self counts, every
stack string and time, and the --by-frame aggregate equal what Python's
json module computes from the same file."""
import collections
import json
import glob
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import by_frame_truth, check, read_csv, read_samples, run, speedscope_truth  # noqa: E402

shared = os.environ.get("SHARED")
tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
# tests/data/pyspy: real py-spy 0.4.3 output (tests/data/pyspy/make.sh);
# ../shared/fixtures/pyspy (authors' py-spy 0.4.1/0.4.2 files), when present, adds cases.
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
files = sorted(glob.glob(os.path.join(here, "data", "pyspy", "*.speedscope.json")))
check(files, "no speedscope files in tests/data/pyspy")
files += sorted(glob.glob(os.path.join(shared or "", "fixtures", "pyspy", "*.json")))

for path in files:
    name = os.path.basename(path)
    doc, truth = speedscope_truth(path)
    out = os.path.join(tmp, name + ".csv")
    r = run(["samples", path, "-o", out])
    check(r.returncode == 0, "%s: exit %d: %s" % (name, r.returncode, r.stderr))
    rows = read_samples(out)
    by_prof = collections.defaultdict(list)
    for row in rows:
        by_prof[row["profile"]].append(row)
    check(set(by_prof) == {p for p, t in truth.items() if t["n"]}, "%s: profiles differ" % name)
    for prof, t in truth.items():
        got = by_prof.get(prof, [])
        check(len(got) == t["n"], "%s %s: %d rows, json has %d samples" % (name, prof, len(got), t["n"]))
        w = sum(float(r["duration_s"]) for r in got)
        check(math.isclose(w, t["weight_s"], rel_tol=1e-9, abs_tol=1e-9),
              "%s %s: total weight %.9f vs %.9f" % (name, prof, w, t["weight_s"]))
        leaves = collections.Counter((r["leaf_function"], r["leaf_file"], r["leaf_line"]) for r in got if r["depth"] != "0")
        check(leaves == t["leaves"], "%s %s: leaf self counts differ" % (name, prof))
        cum = 0.0
        for i, r in enumerate(got):
            check(int(r["sample_index"]) == i, "%s %s: sample_index %s at row %d" % (name, prof, r["sample_index"], i))
            check(r["stack"] == t["stacks"][i], "%s %s: stack of sample %d differs" % (name, prof, i))
            check(int(r["depth"]) == (r["stack"].count(";") + 1 if r["stack"] else 0) or ";" in r["leaf_function"],
                  "%s %s: depth of sample %d" % (name, prof, i))
            check(abs(float(r["t_rel_s"]) - cum) < 1e-6, "%s %s: t_rel_s of sample %d" % (name, prof, i))
            cum += t["weights_s"][i]
    print("ok %s: %d profiles, %d samples, per-thread counts, weights, leaves, stacks, times match json"
          % (name, len(truth), len(rows)))

    fout = os.path.join(tmp, name + ".byframe.csv")
    r = run(["samples", path, "--by-frame", "-o", fout])
    check(r.returncode == 0, "%s --by-frame: exit %d: %s" % (name, r.returncode, r.stderr))
    agg = by_frame_truth(doc)
    got = {(x["function"], x["file"], x["line"]): x for x in read_csv(fout)}
    check(set(got) == set(agg), "%s --by-frame: frame sets differ (%d vs %d)" % (name, len(got), len(agg)))
    for k, (self_n, total_n, self_s, total_s) in agg.items():
        g = got[k]
        check(int(g["self_samples"]) == self_n and int(g["total_samples"]) == total_n,
              "%s --by-frame %s: %s/%s vs %d/%d" % (name, k, g["self_samples"], g["total_samples"], self_n, total_n))
        check(abs(float(g["self_s"]) - self_s) < 1e-6 and abs(float(g["total_s"]) - total_s) < 1e-6,
              "%s --by-frame %s: seconds differ" % (name, k))
    print("ok %s --by-frame: %d frames, self/total samples and seconds match json" % (name, len(agg)))
print("all %d fixtures round-trip" % len(files))

# The samples arrays are scanned by a fast path, everything else by yajl:
# the same document pretty-printed (white space everywhere JSON allows
# it) and with keys in another order must give the same CSV.
path = files[0]
with open(path) as f:
    doc = json.load(f)
pretty = os.path.join(tmp, "pretty.json")
with open(pretty, "w") as f:
    f.write(json.dumps({"shared": doc["shared"], "exporter": doc.get("exporter"),
                        "profiles": [dict(reversed(list(p.items()))) for p in doc["profiles"]]}, indent=2)
            .replace("[", "[ \t").replace(",", " ,\r\n "))
a, b = os.path.join(tmp, "compact.csv"), os.path.join(tmp, "pretty.csv")
check(run(["samples", path, "-o", a]).returncode == 0, "compact")
r = run(["samples", pretty, "-o", b])
check(r.returncode == 0, "pretty-printed: %s" % r.stderr)
check(open(a).read() == open(b).read(), "pretty-printed / reordered copy gives a different CSV")
print("ok pretty-printed, key-reordered copy of %s gives the identical CSV" % os.path.basename(path))
