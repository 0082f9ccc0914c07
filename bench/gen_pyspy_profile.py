#!/usr/bin/env python3
"""Generate a realistic py-spy speedscope profile of a training run:
py-spy 0.4 layout (one compact line, profiles before shared, constant
1/rate weights), one main thread sampled at RATE Hz for SECONDS, a frame
table of ~2,000 (name, file, line) entries with py-spy's first-seen
numbering (so the hot outer frames get small indices), and stacks 20-60
deep that move through phases (data loading, forward through nested
modules, backward, optimizer step) for runs of consecutive samples, as a
real loop does.  Deterministic for a given --seed.

usage: gen_pyspy_profile.py OUT.json [--seconds 3600] [--rate 500] [--seed 1]
"""
import argparse
import json
import random

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--seconds", type=float, default=3600)
ap.add_argument("--rate", type=float, default=500)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()
rng = random.Random(args.seed)

SITE = "/opt/conda/envs/train/lib/python3.11/site-packages/"
frames = []          # (name, file, line)
index = {}           # frame -> py-spy index (first seen)


def fid(fr):
    if fr not in index:
        index[fr] = len(frames)
        frames.append(fr)
    return index[fr]


def lib_frames(pkg, n, depth_hint):
    out = []
    for i in range(n):
        mod = "%s%s/%s/%s.py" % (SITE, pkg, rng.choice(["nn", "autograd", "optim", "utils", "_ops", "cuda", "data"]),
                                 rng.choice(["module", "functional", "modules", "graph", "adamw", "dataloader",
                                             "fetch", "collate", "linear", "activation", "normalization"]))
        out.append(("%s_%d" % (rng.choice(["_call_impl", "forward", "_wrapped_call_impl", "apply", "backward",
                                           "step", "_fetch", "collate", "__next__", "linear", "gelu",
                                           "layer_norm", "_conv_forward", "__call__"]), i), mod,
                    rng.randint(10, 3000)))
    return out


root = [("<module>", "/home/user/project/train.py", 412), ("main", "/home/user/project/train.py", 398),
        ("run", "/home/user/project/trainer.py", 233), ("train_epoch", "/home/user/project/trainer.py", 151)]
pools = {
    "data": lib_frames("torch", 250, 10),
    "forward": lib_frames("torch", 700, 40) + lib_frames("transformers", 400, 40),
    "backward": lib_frames("torch", 350, 20),
    "optim": lib_frames("torch", 200, 10),
    "log": lib_frames("wandb", 100, 10),
}
entry = {
    "data": ("next_batch", "/home/user/project/trainer.py", 120),
    "forward": ("compute_loss", "/home/user/project/trainer.py", 130),
    "backward": ("backward_step", "/home/user/project/trainer.py", 138),
    "optim": ("optimizer_step", "/home/user/project/trainer.py", 142),
    "log": ("log_metrics", "/home/user/project/trainer.py", 148),
}


def make_paths(phase, count):
    """Distinct call paths of one phase: a shared spine with branches."""
    pool = pools[phase]
    spine_len = rng.randint(8, 16)
    spine = rng.sample(pool, spine_len)
    paths = []
    for _ in range(count):
        depth = int(rng.triangular(20, 60, 25)) - len(root) - 1
        branch_at = rng.randint(spine_len // 2, spine_len)
        tail = [rng.choice(pool) for _ in range(max(0, depth - branch_at))]
        paths.append(root + [entry[phase]] + spine[:branch_at] + tail)
    return paths


paths = {ph: make_paths(ph, n) for ph, n in
         (("data", 1000), ("forward", 10000), ("backward", 4000), ("optim", 1000), ("log", 200))}
# Serialize each distinct stack once, numbering frames in first-seen order
# of a warm-up pass so outer frames get small indices like py-spy's.
ser = {ph: ["[" + ",".join(str(fid(f)) for f in p) + "]" for p in ps] for ph, ps in paths.items()}
phase_share = [("data", 0.08), ("forward", 0.45), ("backward", 0.35), ("optim", 0.10), ("log", 0.02)]
n = int(round(args.seconds * args.rate))
weight = 1.0 / args.rate
parts = []
step_len = 250  # samples per training step (0.5 s at 500 Hz)
i = 0
while i < n:
    for ph, share in phase_share:
        run_len = max(1, int(rng.gauss(step_len * share, step_len * share * 0.2)))
        hot = ser[ph]
        # Within a phase a few paths dominate (the hot kernels).
        focus = rng.sample(hot, min(len(hot), 40))
        for _ in range(min(run_len, n - i)):
            parts.append(rng.choice(focus) if rng.random() < 0.8 else rng.choice(hot))
            i += 1
        if i >= n:
            break
# A few empty stacks at start-up and shutdown, as py-spy records them.
parts[:3] = ["[]"] * 3
parts[-5:] = ["[]"] * 5

with open(args.out, "w") as f:
    f.write('{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":[{"type":"sampled",'
            '"name":"Thread 4242 \\"MainThread\\"","unit":"seconds","startValue":0.0,"endValue":%r,"samples":['
            % (n * weight))
    chunk = 100000
    for k in range(0, n, chunk):
        if k:
            f.write(",")
        f.write(",".join(parts[k:k + chunk]))
    f.write('],"weights":[')
    w = repr(weight)
    for k in range(0, n, chunk):
        if k:
            f.write(",")
        f.write(",".join([w] * min(chunk, n - k)))
    f.write(']}],"shared":{"frames":')
    f.write(json.dumps([{"name": a, "file": b, "line": c, "col": None} for a, b, c in frames], separators=(",", ":")))
    f.write('},"activeProfileIndex":null,"exporter":"py-spy@0.4.1","name":"py-spy profile"}')
print("wrote %s: %d samples, %d frames, %d distinct stacks" % (args.out, n, len(frames), sum(len(v) for v in ser.values())))
