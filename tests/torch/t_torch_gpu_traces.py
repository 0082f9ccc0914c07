"""The GPU kernel path reads real Kineto traces that a public project
publishes (tests/data/torch/README.md: Holistic Trace Analysis' test
traces, NVIDIA CUDA and AMD ROCm, .json.gz, with and without
baseTimeNanoseconds), detected by content:
  * every kernel, memcpy and memset becomes a device row ("GPU d stream s"
    thread, device-side start and length), counted against the JSON;
  * the host ops (cpu_op, cuda_runtime, user_annotation) are host rows;
  * a gzip that is not a trace, and a truncated one, are refused with one
    line naming the file, nothing written.
(Energy on these needs their run's ring and perun file, which the traces'
publishers do not give.)"""
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
DATA = os.path.join(ROOT, "tests", "data", "torch")
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)
    return cond


def samples(path, out):
    return subprocess.run([os.path.join(BUILD, "anchorpost"), "samples", "--profile", path, "-o", out],
                          capture_output=True, text=True)


def main():
    for name in ("simple_add_cuda.json.gz", "triton_example.json.gz", "mi250_rocm.json.gz"):
        path = os.path.join(DATA, name)
        d = json.load(gzip.open(path, "rt"))
        ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
        dev = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        out = os.path.join(TMP, name + ".csv")
        p = samples(path, out)
        if not check(p.returncode == 0, "%s: read (%s)" % (name, p.stderr.strip()[-300:])):
            continue
        thr = {r["thread"]: r for r in csv.DictReader(open(out[:-4] + ".threads.csv"))}
        rows = list(csv.DictReader(open(out)))
        gpu_threads = {k for k, t in thr.items() if t["profile"].startswith("GPU ")}
        # a device row per kernel unless two on one stream overlap (they
        # never do on one stream): rows == events
        n_dev = sum(1 for r in rows if r["thread"] in gpu_threads)
        check(n_dev == len(dev), "%s: %d device rows for %d kernels/memcpy/memset" % (name, n_dev, len(dev)))
        streams = {(e["pid"], e["tid"]) for e in dev}
        check(len(gpu_threads) == len(streams), "%s: one device thread per stream (%d)" % (name, len(streams)))
        dev_s = sum(float(r["duration_s"]) for r in rows if r["thread"] in gpu_threads)
        want_s = sum(e["dur"] for e in dev) / 1e6
        check(abs(dev_s - want_s) <= 1e-6 + 1e-6 * want_s, "%s: device time %.6f s = the kernels' %.6f s"
              % (name, dev_s, want_s))
        host = [r for r in rows if r["thread"] not in gpu_threads]
        check(host, "%s: %d host rows" % (name, len(host)))
    # refused inputs
    bad = os.path.join(TMP, "notatrace.json.gz")
    with gzip.open(bad, "wt") as f:
        f.write('{"shared": {"frames": []}, "profiles": []}')
    out = os.path.join(TMP, "bad.csv")
    p = samples(bad, out)
    check(p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "notatrace.json.gz" in p.stderr
          and not os.path.exists(out), "a gzip that is no trace: one line, nothing written: " + p.stderr.strip())
    raw = open(os.path.join(DATA, "simple_add_cuda.json.gz"), "rb").read()
    cut = os.path.join(TMP, "cut.json.gz")
    open(cut, "wb").write(raw[: len(raw) // 2])
    p = samples(cut, out)
    check(p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "cut.json.gz" in p.stderr
          and not os.path.exists(out), "a truncated gzip: one line, nothing written: " + p.stderr.strip())
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
