"""anchor.lightning.AnchorCallback with the real lightning package, on CPU:
a tiny model, 2 epochs x 4 batches, validation each epoch, a checkpoint
each epoch, measure=True against an emulated powercap tree that the
training step advances by exactly 1 J (package) and 0.25 J (dram) per
batch (the energy is known, whatever the timing).

Checks: every range is paired and counted (train.epoch 2, train.batch 8,
train.forward 8, train.backward 8, train.optimizer_step 8, validation 2,
checkpoint.save 2), forward < backward < optimizer step inside each batch,
validation inside its epoch; anchor/epoch_joules logged = 4 x 1.25 J per
epoch; `import anchor.lightning` works and the callback raises a clear
ImportError when lightning is absent (simulated).
"""
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYDIR, PYTHON, ROOT, TMP, check, dump, need_build, ranges, run_py, skip  # noqa: E402

need_build()
# find_spec, not import: only the training script uses lightning, and
# importing it here only to see whether it is there took 9 s of CPU.
if importlib.util.find_spec("lightning") is None:
    skip("lightning not installed (scripts/install-deps.sh)")

EMUL = os.path.join(ROOT, "tools", "emulated_power")
pc = os.path.join(TMP, "pl_powercap")
sys.path.insert(0, EMUL)
from anchor_emul import powercap  # noqa: E402

counters = powercap.create_tree(pc, start_uj={"package": 1000, "dram": 1000})

SCRIPT = r'''
import json, os, sys
import torch
import lightning as L
import anchor.lightning
from anchor_emul import powercap

pkg = powercap.Counter(sys.argv[1], 262143328850, 1000)
dram = powercap.Counter(sys.argv[2], 262143328850, 1000)

class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
    def training_step(self, batch, i):
        x, y = batch
        pkg.add_uj(1_000_000)   # the known energy of one training batch
        dram.add_uj(250_000)
        return torch.nn.functional.mse_loss(self.lin(x), y)
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.lin(x), y))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

torch.manual_seed(0)
ds = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
dl = lambda: torch.utils.data.DataLoader(ds, batch_size=4)
cb = anchor.lightning.AnchorCallback(measure=True)
trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, callbacks=[cb], logger=False,
                    enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                    limit_val_batches=2, default_root_dir=os.getcwd())
trainer.fit(Tiny(), dl(), dl())
print(json.dumps({"joules": cb.epoch_joules,
                  "logged": float(trainer.callback_metrics["anchor/epoch_joules"])}))
'''
ring = os.path.join(TMP, "pl.ring")
os.makedirs(os.path.join(TMP, "pl_run"), exist_ok=True)
p = run_py(SCRIPT, ring, False, cwd=os.path.join(TMP, "pl_run"), timeout=600,
           args=(counters["package"], counters["dram"]),
           extra={"PYTHONPATH_TAIL": EMUL, "ANCHOR_POWERCAP": pc, "PL_DISABLE_FORK": "1"})
out = json.loads(p.stdout.strip().splitlines()[-1])
rows = dump(ring)
want = {"train.epoch": 2, "train.batch": 8, "train.forward": 8, "train.backward": 8, "train.optimizer_step": 8,
        "validation": 2, "checkpoint.save": 2}
got = {}
for name, n in want.items():
    got[name] = ranges(rows, name)  # fails on an unpaired BEGIN/END
    check(len(got[name]) == n, "%s: %d ranges, want %d" % (name, len(got[name]), n))
check(not [r for r in rows if r["name"] == "validation.sanity"], "no sanity check was asked for")
for b, f, bw, st in zip(got["train.batch"], got["train.forward"], got["train.backward"], got["train.optimizer_step"]):
    t = lambda r: r["mono_ns"]
    check(t(b[0]) <= t(f[0]) <= t(f[1]) <= t(bw[0]) <= t(bw[1]) <= t(st[0]) <= t(st[1]) <= t(b[1]),
          "batch order: forward, backward, optimizer step inside the batch")
for (e0, e1), (v0, v1) in zip(got["train.epoch"], got["validation"]):
    check(e0["mono_ns"] <= v0["mono_ns"] <= v1["mono_ns"] <= e1["mono_ns"], "validation inside its epoch")
check([round(j, 6) for j in out["joules"]] == [5.0, 5.0], "epoch joules %s, want 4 x 1.25 J each" % out["joules"])
check(abs(out["logged"] - 5.0) < 1e-6, "logged anchor/epoch_joules %s" % out["logged"])

# Without lightning: the module imports, the callback says what is missing.
p = run_py(r'''
import sys
sys.modules["lightning"] = None; sys.modules["lightning.pytorch"] = None; sys.modules["pytorch_lightning"] = None
import anchor.lightning
try:
    anchor.lightning.AnchorCallback()
except ImportError as e:
    print("ImportError:", e)
''', None, False)
check("ImportError: anchor.lightning.AnchorCallback needs lightning" in p.stdout, "absent lightning: %s" % p.stdout)
print("ok")
