"""Victim of t_gpu_edges_slow.py: a PyTorch training loop whose "device
work" runs on the CPU stand-in device (tests/lib/devstandin.py, an emulated
device, not a GPU), under ANCHOR_AUTO=torch.

Real torch (CPU): a Linear model, a DataLoader, SGD, autograd.  Each phase
burns host time (the launch overhead a real loop has) and queues device
work items of known, jittered durations; the loop waits for the device at
the end of each step (as loss.item() does), so device-side phases lag the
host's.  Power truth: the host's phase and the item the device executes
are published together to an anchor_emul phasefile, so the emulated
RAPL counters follow the host and the emulated NVML GPU follows the
device.  argv: PHASEFILE OUT.json ITERATIONS
"""
import json
import os
import random
import sys
import threading
import time

# perun runs this file in its own process with __file__ set to the app
# name, so the test passes its directory.
TESTS = os.environ.get("GE_TESTS_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS, "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "tools", "emulated_power"))

import devstandin  # noqa: E402
from anchor_emul import phasefile  # noqa: E402

import anchor  # noqa: E402
from anchor import _device_edges  # noqa: E402

HOST = ["idle", "forward", "backward", "optimizer.step", "wait"]
DEV = ["idle", "fwd", "bwd", "opt"]


class Power:
    """One phase id for (host phase, device item): 1 + h * 4 + d."""

    def __init__(self, path):
        self.pub = phasefile.Publisher(path)
        self.lock = threading.Lock()
        self.h = self.d = 0

    def _pub(self):
        self.pub.publish(1 + self.h * len(DEV) + self.d)

    def host(self, name):
        with self.lock:
            self.h = HOST.index(name)
            self._pub()

    def device(self, label, t_ns):
        with self.lock:
            self.d = DEV.index(label) if label else 0
            self._pub()

    def off(self):
        with self.lock:
            self.pub.publish(phasefile.PHASE_OFF)


phase_path, out_path, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
power = Power(phase_path)
dev = devstandin.StandinDevice(drift_ppm=float(os.environ.get("STANDIN_DRIFT_PPM", "500")),
                               on_exec=power.device)
_device_edges.set_backend(dev)  # before import torch: the hooks arm with it

import torch  # noqa: E402

rng = random.Random(7)


def spin(ms):
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def jit(ms):
    return ms * rng.uniform(0.7, 1.3)


class LaunchGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        spin(jit(20))
        dev.launch("bwd", jit(60) / 1e3)
        return g


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 8)

    def forward(self, x):
        power.host("forward")
        y = LaunchGrad.apply(self.lin(x))
        spin(jit(15))
        dev.launch("fwd", jit(40) / 1e3)
        power.host("idle")
        return y


class SGD(torch.optim.SGD):
    def step(self, closure=None):
        power.host("optimizer.step")
        spin(jit(8))
        dev.launch("opt", jit(15) / 1e3)
        r = super().step(closure)
        power.host("idle")
        return r


model = Model()
opt = SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(iters * 4, 64), torch.randn(iters * 4, 8))
loader = torch.utils.data.DataLoader(data, batch_size=4)
time.sleep(1.2)  # lead-in: perun's first samples, everything off
power.host("idle")
for x, y in loader:
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, y)
    power.host("backward")
    loss.backward()
    power.host("idle")
    opt.step()
    opt.zero_grad()
    power.host("wait")
    with anchor.phase("wait"):
        dev.synchronize()  # loss.item(): the host waits for the device
    power.host("idle")
# anchor.phase with device=True (module-level switch already on via auto).
with anchor.phase("eval", device=True):
    dev.launch("fwd", 0.03)
dev.synchronize()
stats = anchor.device_edges(False)
power.off()
time.sleep(1.0)  # lead-out
with open(out_path, "w") as f:
    json.dump({"notice": "emulated device, not a GPU", "stats": stats, "events": dev.events,
               "items": dev.items, "pid": os.getpid()}, f)
print("device edges:", stats)
