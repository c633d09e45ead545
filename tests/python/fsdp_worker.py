"""One rank of the FSDP2 jobs test_fsdp.py starts: `python fsdp_worker.py CASE RANK WORLD DIR`;
run(CASE, 0, WORLD, DIR) in the test's own process is the unsharded process fed every rank's rows.
Each writes DIR/rank<R>.json (the unsharded one DIR/single.json): the audit's records, flags and
NaN origin, and the truth: per step, node and site, what torch computes from the whole
parameter (full_tensor(): every shard gathered), without gradscope.

Cases: "fsdp" (fully_shard on each Linear and the root), "keep" (reshard_after_forward=False),
"bf16" (bf16 parameters in the forward, fp32 gradient reduction), "dead" (the first layer's
bias pushed far below zero: its ReLU never fires, its gradients are all zero on every shard),
"nan" (rank 1's rows carry a NaN at step 1; in one process, the same row), "after" (Adam and
after_step()), "other" (rank 1's hidden layer is wider: the audit's construction is an error
on every rank, naming it). The last Linear has one output: at 2 ranks and more, its shards on every rank but
the first are empty.
"""
import datetime
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

import gradscope

ROWS = 4    # rows each rank takes
STEPS = 4
NODES = ("0", "2", "4")  # the Linears; each ReLU belongs to the Linear before it


def model(case, rank=0):
    torch.manual_seed(3)  # every rank starts from the same weights
    width = 9 if case == "other" and rank == 1 else 8
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
    if case == "dead":
        with torch.no_grad():
            net[0].bias.fill_(-100.0)  # pre-activations below -90: a dead ReLU
    return net


def shard(net, case):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    kw = {}
    if case == "keep":
        kw["reshard_after_forward"] = False
    if case == "bf16":
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for i in (0, 2, 4):
        fully_shard(net[i], **kw)
    fully_shard(net, **kw)


def job_batch(step, world):
    torch.manual_seed(200 + step)
    return torch.randn(world * ROWS, 6) * 2


def whole(t):
    """The whole tensor in float64 (every shard gathered: a collective on every rank)."""
    if hasattr(t, "full_tensor"):
        t = t.full_tensor()
    return t.detach().to(torch.float64).flatten()


def truth_of(x):
    finite = x[torch.isfinite(x)]
    return {"count": x.numel(), "zero": int((x == 0).sum()), "nan": int(torch.isnan(x).sum()),
            "min": finite.min().item() if finite.numel() else None, "max": finite.max().item() if finite.numel() else None,
            "sum": finite.sum().item(), "sum_sq": (finite * finite).sum().item()}


def node_tensors(net, node, what):
    return torch.cat([whole(what(p)) for p in net[int(node)].parameters()])


def stats_dict(s):
    return {k: getattr(s, k) for k in ("count", "finite", "nan", "zero", "sum", "sum_sq", "sum_abs", "min", "max",
                                       "max_abs")}


def run(case, rank, world, out):
    single = not dist.is_initialized()
    net = model(case, rank)
    group = None
    if not single:
        shard(net, case)
        group = True
    opt = (torch.optim.Adam if case == "after" else torch.optim.SGD)(net.parameters(), lr=0.05)
    try:
        audit = gradscope.Audit(net, run=os.path.join(out, "run" if single else f"run{rank}"), process_group=group,
                                histogram_every=2)
    except gradscope.Error as e:
        result = {"error": str(e)}
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        return result
    truth = []
    for step in range(STEPS):
        x = job_batch(step, world)
        if case == "nan" and step == 1:
            x[ROWS + 1, 3] = float("nan")  # a row of rank 1's share
        if not single:
            x = x[rank * ROWS:(rank + 1) * ROWS]
        opt.zero_grad()
        loss = net(x).float().pow(2).mean()  # each rank's mean: FSDP averages, as DDP does
        loss.backward()
        before = {n: node_tensors(net, n, lambda p: p) for n in NODES}
        for n in NODES:
            truth.append([step, n, "param_grad", truth_of(node_tensors(net, n, lambda p: p.grad))])
            truth.append([step, n, "param", truth_of(before[n])])
        if case == "after":
            opt.step()
            audit.after_step()
        else:
            audit.step(opt)
        for n in NODES:
            truth.append([step, n, "update", truth_of(node_tensors(net, n, lambda p: p) - before[n])])
    audit.close()
    report = audit.report()
    origin = report.nonfinite_origin
    result = {
        "records": [[r.step, r.node, r.site, stats_dict(r.stats)] for r in audit.records()],
        "truth": truth,
        "flags": report.flags(),
        "origin": None if origin is None else [origin.step, origin.node, origin.site, origin.rank],
    }
    with open(os.path.join(out, "single.json" if single else f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    return result


def main(run_rank):
    """A rank's process: joins the job's group (a FileStore in DIR) and runs run_rank(CASE,
    RANK, WORLD, DIR) from the command line, under a time limit that prints where it hung."""
    faulthandler.dump_traceback_later(float(os.environ.get("GRADSCOPE_RANK_TIMEOUT", "35")), exit=True)
    case, rank, world, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method="file://" + os.path.join(out, "store"), rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    run_rank(case, rank, world, out)
    sys.stdout.flush()
    os._exit(0)  # no teardown of the group: nothing is left to write


if __name__ == "__main__":
    main(run)
