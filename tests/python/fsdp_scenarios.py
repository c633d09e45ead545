"""One rank of the demo's planted faults trained under FSDP2 (test_fsdp.py starts them):
`python fsdp_scenarios.py NAME RANK WORLD DIR`; run(NAME, 0, WORLD, DIR) in the test's process is
one unsharded process fed every rank's rows, the truth. Each rank takes its share of the rows of
every batch, so the job's step is the one process's (FSDP2 averages the gradients, each rank's
loss is its rows' mean). Writes DIR/rank<R>.json (the process: DIR/single.json): the findings
(flags, flagged order, the first step of each flag) and the NaN origin.

NAME: a scenario of scenarios.py (dying-relu, nan-later, healthy-mlp: the digits MLPs, Adam
1e-3, batch 64, a channel view on every node), or "gpt-unstable" (transformer_lm's unstable
GPT, seed 0, trained as test_compile.py's run_gpt: logits handed to audit.attention, after_step,
the loss recorded; under FSDP2 the loss recorded is the job's mean, all-reduced, as a trainer
logs it).
"""
import json
import os

import torch
import torch.distributed as dist
from torch import nn

import gradscope
import scenarios

from fsdp_worker import main
from unstable_gpt import run_gpt

SCENARIO_STEPS = 60  # test_scenarios.py's


def findings(report):
    origin = report.nonfinite_origin
    return dict(flags=report.flags(), flagged=report.flagged(),
                first={n.node: {e.flag: e.first_step for e in n.evidence} for n in report.nodes},
                origin=None if origin is None else [origin.step, origin.node, origin.site, origin.rank])


def shard(modules, root):
    from torch.distributed.fsdp import fully_shard
    for m in modules:
        fully_shard(m)
    fully_shard(root)


def rows(batch, sharded):
    """This rank's share of a batch's rows (all of them in one process)."""
    if not sharded:
        return batch
    per = len(batch) // dist.get_world_size()
    return batch[dist.get_rank() * per:(dist.get_rank() + 1) * per]


def scenario(name, sharded):
    x, y = scenarios.load_digits(os.path.join(os.environ.get("GRADSCOPE_DATA_DIR") or
                                              os.environ.get("GRADSCOPE_DEFAULT_DATA_DIR", "data"), "digits.csv"))
    torch.manual_seed(7)
    model = scenarios.SCENARIOS[name]()
    if sharded:
        shard([m for m in model if any(True for _ in m.parameters(recurse=False))], model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    audit = gradscope.Audit(model, channels_all_nodes=gradscope.ChannelView(1, 5), process_group=sharded or None)
    g = torch.Generator().manual_seed(7)
    order, cursor = torch.randperm(len(x), generator=g), 0
    with audit:
        for step in range(SCENARIO_STEPS):  # scenarios.train's loop, each rank on its rows
            if cursor + 64 > len(x):
                order, cursor = torch.randperm(len(x), generator=g), 0
            idx = order[cursor:cursor + 64]
            cursor += 64
            if name == "nan-later" and step == scenarios.NAN_STEP:
                with torch.no_grad():
                    bias = model.logfeat.bias
                    if not sharded:
                        bias[0] = -1000.0
                    elif dist.get_rank() == 0:  # element 0 is in rank 0's shard (dimension 0)
                        bias.to_local()[0] = -1000.0
            opt.zero_grad()
            nn.functional.cross_entropy(model(rows(x[idx], sharded)), rows(y[idx], sharded)).backward()
            audit.step(opt)
    return audit


def gpt(sharded):
    def job_loss(loss):  # the job's mean loss, as a trainer logs it
        dist.all_reduce(loss)
        return loss / dist.get_world_size()
    return run_gpt(prepare=(lambda model: shard(list(model.blocks), model)) if sharded else None,
                   rows=lambda batch: rows(batch, sharded), job_loss=job_loss if sharded else None,
                   process_group=sharded or None)


def run(name, rank, world, out):
    sharded = dist.is_initialized()
    audit = gpt(sharded) if name == "gpt-unstable" else scenario(name, sharded)
    result = findings(audit.report())
    with open(os.path.join(out, f"rank{rank}.json" if sharded else "single.json"), "w") as f:
        json.dump(result, f)
    return result


if __name__ == "__main__":
    main(run)
