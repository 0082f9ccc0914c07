"""anchor.hf.AnchorCallback with the real transformers Trainer, on CPU: a
tiny torch model, 16 samples, batch 4, gradient accumulation 2, 2 epochs,
evaluation and a checkpoint each epoch, measure=True against an emulated
powercap tree that each training micro-batch advances by exactly 1 J
(package) + 0.25 J (dram): the energy is known whatever the timing.

Checks: every range is paired and counted (train.epoch 2, train.step 4,
train.batch 8, train.forward 8, train.backward 8, train.optimizer_step 4,
validation 2, checkpoint.save 2; mark train.substep 4); forward before
backward inside each micro-batch; each optimizer step inside its step;
epoch joules 4 x 1.25 J, in log_history and given to on_joules; a Trainer
without the callback writes none of these; `import anchor.hf` works and the
callback raises a clear ImportError when transformers is absent (simulated).
"""
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import ROOT, TMP, check, dump, events, need_build, ranges, run_py, skip  # noqa: E402

need_build()
# find_spec, not import: the test process never uses them itself, and
# importing it only to see whether it is there costs seconds.
_missing = [m for m in ("accelerate", "transformers") if importlib.util.find_spec(m) is None]
if _missing:
    skip("no module named %s (scripts/install-deps.sh installs transformers and accelerate)" % ", ".join(_missing))

EMUL = os.path.join(ROOT, "tools", "emulated_power")
pc = os.path.join(TMP, "hf_powercap")
sys.path.insert(0, EMUL)
from anchor_emul import powercap  # noqa: E402

counters = powercap.create_tree(pc, start_uj={"package": 1000, "dram": 1000})

SCRIPT = r'''
import json, os, sys
import torch
from transformers import Trainer, TrainingArguments
import anchor.hf
from anchor_emul import powercap

pkg = powercap.Counter(sys.argv[1], 262143328850, 1000)
dram = powercap.Counter(sys.argv[2], 262143328850, 1000)

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
    def forward(self, x, labels=None):
        if self.training:
            pkg.add_uj(1_000_000)   # the known energy of one training micro-batch
            dram.add_uj(250_000)
        return {"loss": torch.nn.functional.mse_loss(self.lin(x), labels)}

torch.manual_seed(0)
ds = [{"x": torch.randn(4), "labels": torch.randn(1)} for _ in range(16)]
def args(sub):
    return TrainingArguments(output_dir=os.path.join(os.getcwd(), sub), num_train_epochs=2,
                             per_device_train_batch_size=4, per_device_eval_batch_size=4,
                             gradient_accumulation_steps=2, eval_strategy="epoch", save_strategy="epoch",
                             logging_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
                             dataloader_num_workers=0, learning_rate=0.01)
seen = []
cb = anchor.hf.AnchorCallback(measure=True, on_joules=lambda e, j: seen.append([e, j]))
tr = Trainer(model=Tiny(), args=args("with"), train_dataset=ds, eval_dataset=ds[:8], callbacks=[cb])
tr.train()
anchor.mark("plain.trainer")
Trainer(model=Tiny(), args=args("without"), train_dataset=ds, eval_dataset=ds[:8]).train()
hist = [h["anchor/epoch_joules"] for h in tr.state.log_history if "anchor/epoch_joules" in h]
print(json.dumps({"joules": cb.epoch_joules, "seen": seen, "hist": hist}))
'''
ring = os.path.join(TMP, "hf.ring")
os.makedirs(os.path.join(TMP, "hf_run"), exist_ok=True)
p = run_py(SCRIPT, ring, False, cwd=os.path.join(TMP, "hf_run"), timeout=600,
           args=(counters["package"], counters["dram"]),
           extra={"PYTHONPATH_TAIL": EMUL, "ANCHOR_POWERCAP": pc, "HF_HUB_OFFLINE": "1",
                  "TRANSFORMERS_OFFLINE": "1"})
out = json.loads(p.stdout.strip().splitlines()[-1])
rows = dump(ring)
cut = events(rows, "mark", "plain.trainer")
check(len(cut) == 1, "separator mark")
with_cb = [r for r in rows if r["mono_ns"] < cut[0]["mono_ns"]]
without = [r for r in rows if r["mono_ns"] > cut[0]["mono_ns"]]
want = {"train.epoch": 2, "train.step": 4, "train.batch": 8, "train.forward": 8, "train.backward": 8,
        "train.optimizer_step": 4, "validation": 2, "checkpoint.save": 2}
got = {}
for name, n in want.items():
    got[name] = ranges(with_cb, name)
    check(len(got[name]) == n, "%s: %d ranges, want %d" % (name, len(got[name]), n))
check(len(events(with_cb, "mark", "train.substep")) == 4, "train.substep marks: 4")
t = lambda r: r["mono_ns"]
for (b0, b1), (f0, f1), (w0, w1) in zip(got["train.batch"], got["train.forward"], got["train.backward"]):
    check(t(b0) <= t(f0) <= t(f1) <= t(w0) <= t(w1) <= t(b1), "forward then backward inside the micro-batch")
for (s0, s1), (o0, o1) in zip(got["train.step"], got["train.optimizer_step"]):
    check(t(s0) <= t(o0) <= t(o1) <= t(s1), "optimizer step inside its train.step")
check(not [r for r in without if r["name"] in want], "a Trainer without the callback writes no ranges")
check([round(j, 6) for j in out["joules"]] == [5.0, 5.0], "epoch joules %s, want 4 x 1.25 J" % out["joules"])
check([round(j, 6) for _, j in out["seen"]] == [5.0, 5.0], "on_joules called per epoch: %s" % out["seen"])
check([round(j, 6) for j in out["hist"]] == [5.0, 5.0], "log_history holds the epoch joules: %s" % out["hist"])

p = run_py(r'''
import sys
sys.modules["transformers"] = None
import anchor.hf
try:
    anchor.hf.AnchorCallback()
except ImportError as e:
    print("ImportError:", e)
''', None, False)
check("ImportError: anchor.hf.AnchorCallback needs transformers" in p.stdout, "absent transformers: %s" % p.stdout)
print("ok")
