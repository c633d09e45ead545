"""One rank of the tensor-parallel jobs test_tensor_parallel.py starts: `python tp_worker.py CASE
RANK WORLD DIR`; run(CASE, 0, WORLD, DIR) in the test's process is the same model unsharded, the
truth. Every rank runs the same batches (tensor parallelism); the transformer block's q, k, v and
first MLP layer are ColwiseParallel (each rank a slice of the output features, so of the heads),
its attention output and second MLP layer RowwiseParallel (the output all-reduced, the same on
every rank). Writes DIR/rank<R>.json (the process: DIR/single.json): the records, the flags and
each flag's evidence (its text names the heads).

Cases: "healthy"; "growth" (head 3's query and key rows tripled before every step from step 1:
its largest logit grows ninefold a step, past the limit from step 3; with 4 heads on 2 ranks head
3 is rank 1's second head, planted in rank 1's shard).
"""
import json
import math
import os

import torch
import torch.distributed as dist
from torch import nn

import gradscope
from fsdp_worker import main, stats_dict

D, HEADS, T, BATCH, STEPS = 16, 4, 6, 3, 7
GROWING = 3  # the head whose logits the "growth" case grows
NODES = ["embed", "block.attn", "block.fc1", "block.fc2", "head"]


class Attention(nn.Module):
    """Causal self-attention on as many heads as this rank's slice of wq holds."""

    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(D, D) for _ in range(4))
        self.audit = None

    def forward(self, x):
        b, t, _ = x.shape
        dh = D // HEADS

        def split(y):  # [b, t, local heads x dh] -> [b, local heads, t, dh]
            return y.view(b, t, y.shape[-1] // dh, dh).transpose(1, 2)

        q, k, v = split(self.wq(x)), split(self.wk(x)), split(self.wv(x))
        logits = q @ k.transpose(-1, -2) / math.sqrt(dh)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        if self.audit is not None:
            self.audit.attention(self, logits, mask)
        y = torch.softmax(logits.masked_fill(~mask, float("-inf")), -1) @ v
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.fc1, self.act, self.fc2 = nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.fc2(self.act(self.fc1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.block, self.head = nn.Linear(5, D), Block(), nn.Linear(D, 3)

    def forward(self, x):
        return self.head(self.block(self.embed(x)))


def model():
    torch.manual_seed(5)  # the same weights on every rank
    return Net()


def grow_head(net, parallel):
    """Triples GROWING's query and key rows, in the shard that holds them."""
    dh = D // HEADS
    rows, holder = slice(GROWING * dh, (GROWING + 1) * dh), 0
    if parallel:
        per_rank = HEADS // dist.get_world_size()
        holder, local = GROWING // per_rank, GROWING % per_rank
        rows = slice(local * dh, (local + 1) * dh)
    if parallel and dist.get_rank() != holder:
        return
    with torch.no_grad():
        for layer in (net.block.attn.wq, net.block.attn.wk):
            for p in (layer.weight, layer.bias):
                (p.to_local() if parallel else p)[rows] *= 3


def parallelize(net):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    parallelize_module(net.block, mesh, {"attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(),
                                         "attn.wv": ColwiseParallel(), "attn.wo": RowwiseParallel(),
                                         "fc1": ColwiseParallel(), "fc2": RowwiseParallel()})


def run(case, rank, world, out, parallel=None):
    """parallel: tensor-parallel over the group (by default when torch.distributed is up)."""
    parallel = dist.is_initialized() if parallel is None else parallel
    net = model()
    if parallel:
        parallelize(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    audit = gradscope.Audit(net, nodes=NODES, process_group=True if parallel else None, attention_every=1,
                            histogram_every=2)
    net.block.attn.audit = audit
    for step in range(STEPS):
        torch.manual_seed(300 + step)  # the same batch on every rank
        x = torch.randn(BATCH, T, 5)
        if case == "growth" and step >= 1:
            grow_head(net, parallel)
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        audit.step(opt)
    audit.close()
    report = audit.report()
    result = {"records": [[r.step, r.node, r.site, stats_dict(r.stats)] for r in audit.records()],
              "flags": report.flags(),
              "evidence": {n.node: sorted(str(e) for e in n.evidence) for n in report.nodes}}
    with open(os.path.join(out, f"rank{rank}.json" if parallel else "single.json"), "w") as f:
        json.dump(result, f)
    return result


if __name__ == "__main__":
    main(run)
