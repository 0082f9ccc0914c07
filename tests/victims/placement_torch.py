"""Victim of bench/placement_suite.py (issue 21): phases that no
with-statement opens, so py-spy's stacks hold no phase site.

  python placement_torch.py lightning STEPS   anchor.lightning.AnchorCallback
  python placement_torch.py auto STEPS        a plain loop under ANCHOR_AUTO=torch
  python placement_torch.py hf STEPS          anchor.hf.AnchorCallback on a transformers Trainer

Phase-only functions (the truth, bench/placement_suite.py TORCH_FN):
fwd_work runs only in the forward phase; autograd's _engine_run_backward
only in backward; Adam's _single_tensor_adam (AdamW's, under the HF
Trainer) only in the optimizer step."""
import sys

import torch

torch.set_num_threads(1)
WIDTH, DEPTH, BATCH = 256, 12, 256


def fwd_work(layers, x):
    for lin in layers:
        x = torch.tanh(lin(x))
    return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH))

    def forward(self, x):
        return fwd_work(self.layers, x)


def data(steps):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(BATCH, WIDTH, generator=g) for _ in range(steps)]


def auto(steps):
    net = Net()
    opt = torch.optim.Adam(net.parameters(), foreach=False)
    for x in data(steps):
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def lightning(steps):
    import lightning as L

    from anchor.lightning import AnchorCallback

    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Net()

        def training_step(self, batch, i):
            return self.net(batch).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), foreach=False)

    dl = torch.utils.data.DataLoader(data(steps), batch_size=None)
    t = L.Trainer(max_steps=steps, callbacks=[AnchorCallback()], logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)
    t.fit(M(), dl)


def hf(steps):
    """The HF Trainer's own loop, phases from anchor.hf's callback (its
    compute_loss wrap and optimizer callbacks: no with-statement)."""
    import os
    import tempfile

    from transformers import Trainer, TrainingArguments

    from anchor.hf import AnchorCallback

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = Net()

        def forward(self, x, labels=None):
            return {"loss": self.net(x).pow(2).mean()}

    ds = [{"x": x} for x in data(steps)]
    args = TrainingArguments(output_dir=os.path.join(tempfile.mkdtemp(prefix="anchor-hf-"), "out"), max_steps=steps,
                             per_device_train_batch_size=1, logging_strategy="no", save_strategy="no",
                             report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0,
                             optim="adamw_torch")
    # one sample per step: the batch is the tensor itself (batch_size 1 of
    # [BATCH, WIDTH] rows stacked to [1, BATCH, WIDTH])
    Trainer(model=M(), args=args, train_dataset=ds, callbacks=[AnchorCallback()]).train()


if __name__ == "__main__":
    {"auto": auto, "lightning": lightning, "hf": hf}[sys.argv[1]](int(sys.argv[2]))
