"""pyspy_write_energy_speedscope(): the model written back as a speedscope
file weighted in joules (here duration_s * 7 W per sample) is valid JSON
in speedscope's layout, keeps every sample's stack, and its weights add
up per thread to 7 W times the thread's seconds from `anchorpost samples`."""
import collections
import glob
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import ROOT, check, frame_text, read_csv, read_samples, run  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
shared = os.environ.get("SHARED", "")
drv = os.path.join(tmp, "pyspy_energy_main")
srcs = ["postproc/input/pyspy_%s.c" % n for n in ("tables", "read", "speedscope", "chrometrace", "raw")] + ["postproc/util/diag.c", "postproc/input/input_file.c", "postproc/util/file_ids.c", "postproc/input/torch_trace.c", "postproc/input/gzip_input.c",
   "postproc/output/pyspy_energy.c", "postproc/model/lookup.c"]
flags = subprocess.run(["pkg-config", "--cflags", "--libs", "yajl", "zlib"], capture_output=True, text=True).stdout.split()
r = subprocess.run(["cc", "-std=c11", "-O1", "-g", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I.", "-Ipostproc",
                    "-o", drv, "tests/victims/pyspy_energy_main.c"] + srcs + flags + ["-lm"], cwd=ROOT, capture_output=True, text=True)
check(r.returncode == 0, "building the driver: %s" % r.stderr)

inputs = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "pyspy", "*.json")))
inputs += [os.path.join(ROOT, "tests", "data", "pyspy", "victim.raw.txt")]
inputs += sorted(glob.glob(os.path.join(shared, "fixtures", "pyspy", "*.json")))
inputs += [os.path.join(ROOT, "tests/fuzz/seeds/chrometrace/victim.json"), os.path.join(ROOT, "tests/fuzz/seeds/raw/victim.txt"),
           os.path.join(ROOT, "tests/fuzz/seeds/speedscope/evented.json")]
POWER = 7.0
for path in inputs:
    name = os.path.basename(path)
    out = os.path.join(tmp, name + ".energy.json")
    r = subprocess.run([drv, path, out, str(POWER)], capture_output=True, text=True)
    check(r.returncode == 0, "%s: driver failed: %s" % (name, r.stderr))
    with open(out) as f:
        doc = json.load(f)
    check(doc["$schema"].startswith("https://www.speedscope.app/"), "%s: no $schema" % name)
    frames = doc["shared"]["frames"]
    csvp = os.path.join(tmp, name + ".csv")
    r2 = run(["samples", path, "-o", csvp])
    check(r2.returncode == 0, "%s: samples: %s" % (name, r2.stderr))
    rows = read_samples(csvp)
    by_prof = collections.defaultdict(list)
    for x in rows:
        by_prof[x["profile"]].append(x)
    raw = name.endswith(".txt")
    for prof in doc["profiles"]:
        check(prof["type"] == "sampled" and prof["unit"] == "none" and prof["name"].endswith(" (joules)"),
              "%s: profile header %r" % (name, {k: prof[k] for k in ("type", "unit", "name")}))
        check(len(prof["samples"]) == len(prof["weights"]), "%s: samples/weights lengths" % name)
        check(all(w >= 0 for w in prof["weights"]), "%s: negative joules" % name)
        src = by_prof[prof["name"][: -len(" (joules)")]]
        stacks = [";".join(frame_text(frames[i]) for i in s) for s in prof["samples"]]
        if raw:  # one model sample per distinct stack; the CSV repeats it count times
            got = collections.Counter()
            for st, w in zip(stacks, prof["weights"]):
                got[st] += w / POWER
            want = collections.Counter(x["stack"] for x in src)
            check(set(got) == set(want) and all(abs(got[k] - want[k]) < 1e-9 for k in want),
                  "%s: per-stack joules differ from count x power" % name)
            want_j = POWER * len(src)
        else:
            check(stacks == [x["stack"] for x in src], "%s %s: stacks differ from the CSV" % (name, prof["name"]))
            want_j = POWER * sum(float(x["duration_s"]) for x in src)
        check(math.isclose(sum(prof["weights"]), want_j, rel_tol=1e-9, abs_tol=1e-9),
              "%s %s: %.9f J vs %.9f J" % (name, prof["name"], sum(prof["weights"]), want_j))
        check(math.isclose(prof["endValue"], sum(prof["weights"]), rel_tol=1e-9, abs_tol=1e-12), "%s: endValue" % name)
    # Marked as ours near its start, so a run directory's scan and the
    # reader never take it for py-spy's profile (issue 22 point 6).
    with open(out, "rb") as f:
        head = f.read(200)
    check(b'"exporter":"anchorpost"' in head, "%s: exporter not in the first bytes: %r" % (name, head[:120]))
    r3 = run(["samples", out, "-o", os.path.join(tmp, name + ".again.csv")])
    check(r3.returncode == 1 and r3.stderr.count("\n") == 1 and "written by anchorpost" in r3.stderr
          and out in r3.stderr and not os.path.exists(os.path.join(tmp, name + ".again.csv")),
          "%s: samples on the energy profile: exit %d, %r" % (name, r3.returncode, r3.stderr))
    print("ok %s: %d profiles, %d samples; valid speedscope, stacks kept, joules = %g W x seconds per thread (%s)"
          % (name, len(doc["profiles"]), sum(len(p["samples"]) for p in doc["profiles"]), POWER, r.stdout.strip()))
