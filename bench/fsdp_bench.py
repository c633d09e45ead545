"""make bench-fsdp: the collectives an Audit adds to an FSDP2 training step, against the step's
own, at 2 and 4 ranks (Gloo over loopback, torchrun), measured by torch's profiler in one job.

The model is bench-python's MLP (64-4x1024-10, 3.2M parameters, batch 64 a rank, SGD), each
Linear and the root wrapped with fully_shard, audited every step. For STEPS profiled steps, every
collective the ranks' process group ran is a profiler event: c10d::_allgather_base_ (FSDP2's
parameter all-gathers: its output, every rank's shard), c10d::_reduce_scatter_base_ (its gradient
reduce-scatters: its input), and c10d::allgather_ inside audit.step() (the audit's one merge: its
buffer of int64 words, gathered from every rank). Bytes are those tensors' sizes on a rank;
time is the Gloo work's (the gloo:* event each starts, on Gloo's threads). The last line is one
JSON object: per world size, the audit's collectives, bytes and time and their shares of FSDP2's.
"""
import json
import os
import socket
import subprocess
import sys

STEPS = int(os.environ.get("BENCH_STEPS", "10"))
WORLDS = (2, 4)


def rank_main():
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.fsdp import fully_shard
    from torch.profiler import ProfilerActivity, profile, record_function

    import gradscope

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    widths = [64, 1024, 1024, 1024, 1024, 10]
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    audit = gradscope.Audit(model, process_group=True)

    def step():
        x = torch.randn(64, 64)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        with record_function("gradscope:audit.step"):
            audit.step(opt)

    for _ in range(2):  # FSDP2's lazy initialisation, the audit's first step
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(STEPS):
            step()
    audit.close()
    if dist.get_rank() == 0:
        print(json.dumps(tally(prof.events(), dist.get_world_size())), flush=True)
    dist.destroy_process_group()


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def tally(events, world):
    """Sums the collectives' bytes and Gloo time, FSDP2's and the audit's, per profiled step."""
    events = sorted(events, key=lambda e: e.time_range.start)
    audit_ranges = [e.time_range for e in events if e.name == "gradscope:audit.step"]
    gloo = [e for e in events if e.name.startswith("gloo:")]
    used = set()

    def work_after(op):
        """The Gloo work a c10d op started: the first gloo:* event beginning after it."""
        for i, g in enumerate(gloo):
            if i not in used and g.time_range.start >= op.time_range.start:
                used.add(i)
                return g
        return None

    sides = {"fsdp": {"collectives": 0, "bytes": 0, "us": 0.0}, "audit": {"collectives": 0, "bytes": 0, "us": 0.0}}
    for e in events:
        if e.name in ("c10d::_allgather_base_", "c10d::_reduce_scatter_base_"):
            side, size = "fsdp", (numel(e.input_shapes[0]) if e.name == "c10d::_allgather_base_"
                                  else numel(e.input_shapes[1])) * 4  # float32 parameters and gradients
        elif e.name == "c10d::allgather_" and any(r.start <= e.time_range.start <= r.end for r in audit_ranges):
            side, size = "audit", None
        else:
            continue
        work = work_after(e)
        if size is None:  # the audit's buffer: int64 words, one from each rank
            size = (numel(work.input_shapes[0]) if work and work.input_shapes else 0) * 8 * world
        sides[side]["collectives"] += 1
        sides[side]["bytes"] += size
        sides[side]["us"] += work.cpu_time_total if work else 0.0
    for s in sides.values():
        s["collectives"] /= STEPS
        s["bytes"] = round(s["bytes"] / STEPS)
        s["us"] = round(s["us"] / STEPS, 1)
    fsdp, audit = sides["fsdp"], sides["audit"]
    return {"world": world, "fsdp_collectives_per_step": fsdp["collectives"], "fsdp_bytes_per_step": fsdp["bytes"],
            "fsdp_gloo_us_per_step": fsdp["us"], "audit_collectives_per_step": audit["collectives"],
            "audit_bytes_per_step": audit["bytes"], "audit_gloo_us_per_step": audit["us"],
            "bytes_share": round(audit["bytes"] / fsdp["bytes"], 5) if fsdp["bytes"] else None,
            "time_share": round(audit["us"] / fsdp["us"], 4) if fsdp["us"] else None}


def main():
    results = []
    for world in WORLDS:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(world),
                               "--master-addr", "127.0.0.1", "--master-port", str(port), __file__, "--rank"],
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"bench-fsdp: the {world}-rank job failed:\n{done.stdout}\n{done.stderr}")
        line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
        result = json.loads(line)
        print(f"{world} ranks: FSDP2 {result['fsdp_collectives_per_step']:g} collectives, "
              f"{result['fsdp_bytes_per_step']} B, {result['fsdp_gloo_us_per_step']} us of Gloo a step; the audit "
              f"{result['audit_collectives_per_step']:g}, {result['audit_bytes_per_step']} B, "
              f"{result['audit_gloo_us_per_step']} us (bytes {result['bytes_share']}, time {result['time_share']})")
        results.append(result)
    print(json.dumps({"bench": "fsdp", "steps": STEPS, "worlds": results}))


if __name__ == "__main__":
    if "--rank" in sys.argv:
        rank_main()
    else:
        main()
