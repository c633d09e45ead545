"""The one rank of test_cuda_nccl.py, in a process of its own (a hung collective is then killed
by the test's timeout, not the whole check): `python nccl_worker.py BACKEND DEVICE PORT OUT`.

It starts a one-rank job of BACKEND ("nccl", or "cpu:gloo,cuda:nccl"; "gloo" in the stand-in),
trains the same small model on DEVICE twice, once with gradscope.Audit(process_group=
dist.group.WORLD) and the gradients all-reduced as data-parallel training does, once with no
group, and writes OUT (JSON): both runs' records and reports, the backend the run file
recorded, and the error, if any, with its traceback."""
import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch import nn

import gradscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import records  # noqa: E402

STEPS = 4


def train(device, group, run):
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 4)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(5)
    with gradscope.Audit(net, run=run, process_group=group) as audit:
        for _ in range(STEPS):
            x, y = torch.randn(8, 10, generator=g).to(device), torch.randn(8, 4, generator=g).to(device)
            opt.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            if group is not None:
                for p in net.parameters():  # DDP's all-reduce: a sum over one rank
                    dist.all_reduce(p.grad, group=group)
            audit.step(opt)
    keyed = [[*key, value] for key, value in records(audit).items()]
    return {"records": keyed, "report": audit.report().to_dict(), "flags": audit.report().flags()}


def main(backend, device, port, out):
    result = {"backend": backend, "error": None}
    try:
        dist.init_process_group(backend, rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}",
                                timeout=datetime.timedelta(seconds=60))
        device = torch.device(device)
        if device.type == "cuda":
            torch.cuda.set_device(0)
        run = os.path.join(os.path.dirname(out), "run_group")
        result["group"] = train(device, dist.group.WORLD, run)
        result["alone"] = train(device, None, None)
        meta = gradscope.load_run(run).metadata
        result["run"] = {"world_size": meta.world_size, "backend": meta.backend}
    except Exception as e:  # the test shows it
        result["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(result, f)
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
