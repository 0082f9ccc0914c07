"""A real (small) transformer trained on CPU under torch.profiler, with its
phases published to the emulated sensor (tools/groundtruth: this program
takes workload.py's place in run_scenario.run) and anchored, each anchor
range mirrored as a record_function of the same name:

  data            a batch is made, then a jittered sleep (20-60 ms)
  forward         model(x) and the loss
  backward        loss.backward()
  optimizer.step  SGD step and zero_grad

  python torch_truth_train.py --spec S --phase-file P --log L --trace OUT.json[.gz]
         [--steps N] [--layers DEPTH]

--layers DEPTH also anchors every module to that depth with
anchor.torch.layers (forward and backward phases by module path); each
layer phase named in the spec gets its own power: the anchor module's
begin/end that layers() calls are wrapped here to publish the innermost
phase at the instant it is anchored (at a layer's end, the phase around
it again).  The log (phase,t_begin_mono_ns,t_end_mono_ns) has every
published phase: the power the emulated sensor drew at each instant.
Emulated sensor, not a measurement.
"""
import argparse
import json
import os
import random
import sys
import time

import anchor
import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools", "emulated_power"))
from anchor_emul import phasefile  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--phase-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--layers", type=int, default=0)
    a = ap.parse_args()
    spec = json.load(open(a.spec))
    ids = {p["name"]: i for i, p in enumerate(spec["phases"], start=1)}
    pub = phasefile.Publisher(a.phase_file)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # two shared cores: keep the test's own load small
    layer = torch.nn.TransformerEncoderLayer(48, 4, 96, dropout=0.0, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 48), torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                                torch.nn.Linear(48, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    rng = random.Random(1)
    log = []
    stack = []

    def phase(name):
        t = pub.publish(ids[name])
        log.append((name, t))
        stack[:] = [name]
        return t

    if a.layers:
        raw = anchor._anchor
        real_begin, real_end = raw.begin, raw.end

        def begin(name):
            if name in ids:
                stack.append(name)
                log.append((name, pub.publish(ids[name])))
            real_begin(name)

        def end(name):
            real_end(name)
            if name in ids and stack and stack[-1] == name:
                stack.pop()
                if stack:
                    log.append((stack[-1], pub.publish(ids[stack[-1]])))

        raw.begin, raw.end = begin, end
        anchor.torch.layers(model, depth=a.layers)
        raw.begin, raw.end = real_begin, real_end

    time.sleep(float(spec.get("lead_in_s", 1.0)))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for step in range(a.steps):
            phase("data")
            with anchor.phase("data"), record_function("data"):
                x = torch.randn(8, 24, 16)
                y = torch.randn(8, 24, 1)
                time.sleep(rng.uniform(0.02, 0.06))
            phase("forward")
            with anchor.phase("forward"), record_function("forward"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            phase("backward")
            with anchor.phase("backward"), record_function("backward"):
                loss.backward()
            phase("optimizer.step")
            with anchor.phase("optimizer.step"), record_function("optimizer.step"):
                opt.step()
                opt.zero_grad()
        t_off = pub.publish(phasefile.PHASE_OFF)
    prof.export_chrome_trace(a.trace)
    with open(a.log + ".tmp", "w") as f:
        f.write("phase,t_begin_mono_ns,t_end_mono_ns\n")
        for i, (name, t0) in enumerate(log):
            t1 = log[i + 1][1] if i + 1 < len(log) else t_off
            f.write(f"{name},{t0},{t1}\n")
    os.replace(a.log + ".tmp", a.log)
    time.sleep(float(spec.get("lead_out_s", 1.0)))


if __name__ == "__main__":
    main()
