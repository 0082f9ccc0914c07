"""Victim for tests/torch/t_torch_layers_edges.py: anchor.torch.layers on a
model with a first layer on data (no input gradient), a nested encoder,
a head, and a branch whose input gradient never comes (a leaf input the
branch detaches); STEPS training steps inside anchor phases, then one
evaluation under torch.no_grad, then the hooks removed and one more step."""
import sys

import anchor
import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


class Tap(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = torch.nn.Linear(d, 1)

    def forward(self, x):
        return self.lin(x.detach())


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 48)
        layer = torch.nn.TransformerEncoderLayer(48, 4, 96, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(48, 1)
        self.tap = Tap(48)

    def forward(self, x, aux):
        return self.head(self.enc(self.a(x))).mean() + self.tap(aux).mean()


torch.manual_seed(0)
torch.set_num_threads(1)
net = Net()
aux = torch.randn(8, 48, requires_grad=True)  # its gradient is never computed: Tap detaches it
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
# the moment the first layer's weight gradient lands, registered before
# layers() so that it runs before anything of anchor's on the same tensor
net.a.weight.register_post_accumulate_grad_hook(lambda p: anchor.mark("a.weight.grad"))
h = anchor.torch.layers(net, depth=2)
print("paths " + ",".join(h.paths))


def step():
    with anchor.phase("forward"):
        loss = net(torch.randn(8, 24, 16), aux)
    with anchor.phase("backward"):
        loss.backward()
    with anchor.phase("optimizer"):
        opt.step()
        opt.zero_grad()


for _ in range(STEPS):
    step()
with anchor.phase("eval"), torch.no_grad():
    net(torch.randn(8, 24, 16), aux)
h.remove()
with anchor.phase("after_remove"):
    step()
