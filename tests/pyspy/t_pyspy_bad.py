"""Bad py-spy inputs: each makes `anchorpost samples` (CSV and --by-frame)
exit 1 with one line naming the file and the location, and leave no
output file behind (not even a temp file)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import check, run  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
# a real py-spy file to truncate (tests/data/pyspy, made by its make.sh)
fixtures = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pyspy", "victim.speedscope.json")]


def ss(profiles, frames=None, **top):
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json", "profiles": profiles,
           "shared": {"frames": frames if frames is not None else [{"name": "f", "file": "a.py", "line": 1}]}}
    doc.update(top)
    return json.dumps(doc).encode()


def prof(samples, weights, **kw):
    p = {"type": "sampled", "name": "Thread 1 \"MainThread\"", "unit": "seconds", "startValue": 0,
         "endValue": 1, "samples": samples, "weights": weights}
    p.update(kw)
    return p


good_ct = [{"args": {"filename": "a.py", "line": 1}, "cat": "py-spy", "name": "f", "ph": "B", "pid": 1, "tid": 2, "ts": 0},
           {"args": {"filename": "a.py", "line": 1}, "cat": "py-spy", "name": "f", "ph": "E", "pid": 1, "tid": 2, "ts": 10}]
fixture = open(fixtures[0], "rb").read()

cases = [
    ("empty", b"", [], "empty file"),
    ("truncated", fixture[: len(fixture) // 2], [], "truncated JSON"),
    ("truncated_tiny", b'{"profiles":[{"type":"sampled"', [], "truncated JSON"),
    ("top_string", b'"hello"', [], "top-level value is not an object"),
    ("top_number", b"42", [], "top-level value is not an object"),
    ("array_as_speedscope", json.dumps(good_ct).encode(), ["--format", "speedscope"], "top-level value is not an object"),
    ("object_as_chrometrace", ss([prof([[0]], [1])]), ["--format", "chrometrace"], "no \"traceEvents\""),
    ("no_profiles", b'{"foo": 1}', [], "no \"profiles\""),
    ("length_mismatch", ss([prof([[0], [0], [0]], [0.01, 0.01])]), [], "profiles[0]: 3 samples but 2 weights"),
    ("negative_weight", ss([prof([[0], [0]], [0.01, -0.01])]), [], "negative weight"),
    ("frame_out_of_range", ss([prof([[0], [0, 5]], [0.01, 0.01])]), [], "frame index 5 out of range"),
    ("frame_negative", ss([prof([[0, -1]], [0.01])]), [], "frame index out of range"),
    ("frame_not_int", ss([prof([[0, 1.5]], [0.01])]), [], "other than a frame index"),
    ("no_frames", json.dumps({"profiles": [prof([[0]], [1])]}).encode(), [], "no \"shared.frames\""),
    ("unknown_unit", ss([prof([[0]], [1], unit="furlongs")]), [], "unknown unit 'furlongs'"),
    ("bad_type", ss([prof([[0]], [1], type="instrumented")]), [], "neither \"sampled\" nor \"evented\""),
    ("deep_in_samples", b'{"profiles":[{"samples":[' + b"[" * 200000, [], "other than a frame index"),
    ("deep_skipped", b'{"x":' + b"[" * 200000 + b"]" * 200000 + b"}", [], "nesting too deep"),
    ("deep_chrometrace", b"[" * 200000, [], "an event is not an object"),
    ("trailing_garbage", ss([prof([[0]], [1])]) + b" xyz", [], "invalid JSON"),
    ("bad_utf8", ss([prof([[0]], [1])], frames=[{"name": "f"}]).replace(b'"f"', b'"\xff\xfe"'), [], "invalid JSON"),
    ("evented_bad_close", ss([{"type": "evented", "name": "x", "unit": "milliseconds", "startValue": 0, "endValue": 2,
                               "events": [{"type": "O", "frame": 0, "at": 0}, {"type": "C", "frame": 1, "at": 1}]}],
                             frames=[{"name": "f"}, {"name": "g"}]), [], "does not match the open frame"),
    ("ct_phase_x", json.dumps([dict(good_ct[0], ph="X", dur=5)]).encode(), [], "is not B or E"),
    ("ct_e_without_b", json.dumps([good_ct[1]]).encode(), [], "no open frame"),
    ("ct_ts_backwards", json.dumps([dict(good_ct[0], ts=10), dict(good_ct[1], ts=5)]).encode(), [], "ts goes backwards"),
    ("samples_leading_zero", ss([prof([[0]], [1])]).replace(b'"samples": [[0]]', b'"samples": [[00]]'), [], "leading zero"),
    ("samples_garbage", ss([prof([[0]], [1])]).replace(b'"samples": [[0]]', b'"samples": [[0 x]]'), [], "invalid JSON in a sample"),
    ("samples_float", ss([prof([[0]], [1])]).replace(b'"samples": [[0]]', b'"samples": [[1e3]]'), [], "other than a frame index"),
    ("samples_huge_index", ss([prof([[0]], [1])]).replace(b'"samples": [[0]]', b'"samples": [[99999999999999999999]]'), [], "frame index out of range"),
    ("samples_truncated", b'{"profiles":[{"type":"sampled","samples":[[1,2', [], "truncated JSON (inside \"samples\")"),
    ("raw_binary", b"\x00\x01\x02garbage\xff 12\n", [], "NUL byte"),
    ("raw_no_count", b"main (a.py:1);f (a.py:2)\n", [], "sample count is not a number"),
    ("raw_zero_count", b"main (a.py:1) 0\n", [], "sample count is 0"),
]

for name, data, extra, want in cases:
    path = os.path.join(tmp, name + ".in")
    with open(path, "wb") as f:
        f.write(data)
    for mode in ([], ["--by-frame"]):
        outdir = os.path.join(tmp, name + ("_byframe" if mode else "_csv"))
        os.makedirs(outdir)
        out = os.path.join(outdir, "out.csv")
        r = run(["samples", path, "-o", out] + extra + mode)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1, "%s %s: exit %d (want 1), stderr %r" % (name, mode, r.returncode, r.stderr))
        check(len(lines) == 1, "%s %s: %d stderr lines: %r" % (name, mode, len(lines), r.stderr))
        check(lines[0].startswith("anchorpost: %s: " % path), "%s: message does not name the file: %r" % (name, lines[0]))
        check(want in lines[0], "%s: message lacks %r: %r" % (name, want, lines[0]))
        check(os.listdir(outdir) == [], "%s %s: left files behind: %s" % (name, mode, os.listdir(outdir)))
    print("ok %-22s exit 1, one line, no output: %s" % (name, lines[0]))
print("%d bad inputs refused cleanly" % len(cases))
