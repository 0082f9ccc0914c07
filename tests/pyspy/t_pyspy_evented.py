"""Evented speedscope profiles (pyinstrument and other exporters write
O/C events instead of samples) are read as intervals of an unchanged
stack, with times in the profile's unit converted to seconds."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import check, read_csv, read_samples, run  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
doc = {
    "$schema": "https://www.speedscope.app/file-format-schema.json",
    "shared": {"frames": [{"name": "main", "file": "m.py", "line": 1}, {"name": "work", "file": "m.py", "line": 7}]},
    "profiles": [{"type": "evented", "name": "pyinstrument", "unit": "milliseconds", "startValue": 100,
                  "endValue": 110, "events": [
                      {"type": "O", "frame": 0, "at": 100}, {"type": "O", "frame": 1, "at": 102},
                      {"type": "C", "frame": 1, "at": 105}, {"type": "C", "frame": 0, "at": 110}]}],
    "exporter": "pyinstrument@4.6", "name": "x"}
path = os.path.join(tmp, "evented.json")
with open(path, "w") as f:
    json.dump(doc, f)
r = run(["samples", path, "-o", path + ".csv"])
check(r.returncode == 0, "evented: %s" % r.stderr)
rows = read_samples(path + ".csv")
want = [("0.000000000", "0.002000000", "main (m.py:1)"), ("0.002000000", "0.003000000", "main (m.py:1);work (m.py:7)"),
        ("0.005000000", "0.005000000", "main (m.py:1)")]
got = [(x["t_rel_s"], x["duration_s"], x["stack"]) for x in rows]
check(got == want, "evented rows: %r" % got)
r = run(["samples", path, "--by-frame", "-o", path + ".f.csv"])
fr = {x["function"]: x for x in read_csv(path + ".f.csv")}
check(fr["work"]["self_s"] == "0.003000000" and fr["main"]["total_s"] == "0.010000000", "evented --by-frame: %r" % fr)
print("ok evented profile: 3 intervals with ms converted to s (%r); by-frame self/total seconds right" % got)
