"""samples.csv names threads where the profile does: speedscope profile
names (`Process P Thread T "name"`: OS tid and name), chrometrace
thread_name metadata events (py-spy 0.4 writes none, other writers do; its
tid is a pthread id, so samples.csv's OS tid stays empty without --ring and
samples.threads.csv keeps the pthread id).  Also the compact layout itself:
stack_id into .stacks.csv/.frames.csv, no column named after a DataFrame
method, one dtype per column in pandas, stack_text only on request or -o -."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import check, read_csv, read_samples, run  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")

# chrometrace: two threads of pid 7, one named by a metadata event
ev = lambda ph, name, tid, ts, **kw: dict(ph=ph, name=name, pid=7, tid=tid, ts=ts, cat="py-spy",
                                          args={"filename": "/x/m.py", "line": 3}, **kw)
events = [{"ph": "M", "name": "thread_name", "pid": 7, "tid": 140001, "args": {"name": "loader"}},
          ev("B", "main", 140000, 0), ev("B", "step", 140000, 0), ev("B", "load", 140001, 5),
          ev("E", "step", 140000, 10), ev("E", "load", 140001, 12), ev("E", "main", 140000, 20)]
ct = os.path.join(tmp, "named.chrometrace.json")
with open(ct, "w") as f:
    json.dump(events, f)
out = os.path.join(tmp, "ct.csv")
r = run(["samples", ct, "-o", out])
check(r.returncode == 0, "chrometrace: %s" % r.stderr)
rows = read_samples(out)
th = {t["pthread_id"]: t for t in read_csv(os.path.join(tmp, "ct.threads.csv"))}
check(th["140001"]["thread_name"] == "loader" and th["140000"]["thread_name"] == "", "chrometrace names: %r" % th)
check(all(t["tid"] == "" for t in th.values()), "chrometrace: pthread id written as an OS tid: %r" % th)
check({r["thread_name"] for r in rows if "load (" in r["stack"]} == {"loader"}, "samples.csv thread_name: %r" % rows)
check("stack_text" not in rows[0] and "stack" not in read_csv(out)[0], "stack text in the default layout")
print("ok chrometrace: thread_name metadata names thread 140001 'loader'; tid empty, pthread_id in threads.csv")

# speedscope: py-spy's profile names carry pid, OS tid and name
frames = [{"name": "main", "file": "/x/m.py", "line": 1}, {"name": "work", "file": "/x/m.py", "line": 2}]
prof = lambda name, samples: {"type": "sampled", "name": name, "unit": "seconds", "startValue": 0,
                              "endValue": 0.01 * len(samples), "samples": samples, "weights": [0.01] * len(samples)}
doc = {"$schema": "https://www.speedscope.app/file-format-schema.json", "exporter": "py-spy@0.4.3",
       "profiles": [prof('Process 7 Thread 42 "trainer"', [[0, 1], [0, 1], [0]]), prof('Process 7 Thread 43 ""', [[0]])],
       "shared": {"frames": frames}, "name": "x"}
ss = os.path.join(tmp, "named.speedscope.json")
with open(ss, "w") as f:
    json.dump(doc, f)
out = os.path.join(tmp, "ss.csv")
r = run(["samples", ss, "-o", out])
check(r.returncode == 0, "speedscope: %s" % r.stderr)
rows = read_samples(out)
got = {(r["pid"], r["tid"], r["thread_name"]) for r in rows}
check(got == {("7", "42", "trainer"), ("7", "43", "")}, "speedscope pid/tid/name: %r" % got)
check([r["stack"] for r in rows[:2]] == ["main (/x/m.py:1);work (/x/m.py:2)"] * 2 and rows[0]["stack_id"] == rows[1]["stack_id"],
      "speedscope stacks by id: %r" % rows[:2])
print("ok speedscope: pid 7, OS tids 42/43, thread name 'trainer' from the profile names")

r = run(["samples", ss, "-o", "-"])
check(r.returncode == 0 and r.stdout.splitlines()[0].endswith(",stack_id,stack_text"), "-o -: %r" % r.stdout[:200])
check(not os.path.exists("-.stacks.csv"), "-o - wrote companions")
print("ok -o -: one self-contained table with stack_text")

try:
    import pandas as pd
except ImportError:
    print("pandas missing: dtype checks skipped")
    sys.exit(0)
s = pd.read_csv(out)
for col, kind in (("thread", "i"), ("pid", "i"), ("tid", "i"), ("sample_index", "i"), ("t_rel_s", "f"),
                  ("duration_s", "f"), ("depth", "i"), ("stack_id", "i")):
    check(s[col].dtype.kind == kind, "samples.csv %s: %s" % (col, s[col].dtype))
bad = [c for c in s.columns if hasattr(pd.DataFrame, c)]
check(not bad, "columns named after DataFrame attributes: %r" % bad)
st = pd.read_csv(os.path.join(tmp, "ss.stacks.csv"))
fr = pd.read_csv(os.path.join(tmp, "ss.frames.csv"))
check(all(st[c].dtype.kind == "i" for c in st.columns) and fr["line"].dtype.kind in "if", "companion dtypes")
leaf = st.sort_values("depth").groupby("stack_id").frame_id.last()
s["leaf"] = s.stack_id.map(leaf).map(fr.set_index("frame_id").function)
check(list(s["leaf"]) == ["work", "work", "main", "main"], "leaf join (docs/report.md recipe): %r" % list(s["leaf"]))
print("ok pandas: one dtype per column, no DataFrame-method names, the docs' leaf join works")
