"""A user's own small PyTorch training script (not examples/transformer.py):
marks and ranges mixed as the README writes them; fwd_only_work runs only
inside "fwd".  argv: STEPS [PULSE_EVERY]"""
import sys, time
import torch
import anchor

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
# argv[2]: a sync pulse every N steps (0: none), as a user may add them
pulse_every = int(sys.argv[2]) if len(sys.argv) > 2 else 0
text = (b"the quick brown fox jumps over the lazy dog " * 200)
data = torch.tensor(list(text), dtype=torch.long)
V, C, T = 256, 64, 32
emb = torch.nn.Embedding(V, C)
mlp = torch.nn.Sequential(torch.nn.Linear(C * T, 256), torch.nn.GELU(), torch.nn.Linear(256, V))
params = list(emb.parameters()) + list(mlp.parameters())
opt = torch.optim.Adam(params, lr=1e-3)

def get_batch():
    ix = torch.randint(0, len(data) - T - 1, (64,))
    x = torch.stack([data[i:i + T] for i in ix])
    y = data[ix + T]
    return x, y

def fwd_only_work(x):
    # runs only inside the "fwd" phase
    h = emb(x).reshape(x.shape[0], -1)
    for _ in range(3):
        h2 = h @ torch.ones(h.shape[1], 8)
    return mlp(h), h2

for step in range(steps):
    if pulse_every and step % pulse_every == 0:
        anchor.sync_pulse()
    anchor.mark("data")
    x, y = get_batch()
    time.sleep(0.01)
    with anchor.phase("fwd"):
        logits, _ = fwd_only_work(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
    with anchor.phase("bwd"):
        opt.zero_grad()
        loss.backward()
    with anchor.phase("optim"):
        opt.step()
print("final loss %.3f" % loss.item())
