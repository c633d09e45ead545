"""One rank of the data-parallel jobs test_distributed.py starts (and, with world 0, the one
process it compares them with): `python distributed_worker.py MODE[,MODE...] RANK WORLD DIR`, or run()
called in the test's own process for the reference. Each rank writes DIR/MODE/rank<R>.json: what its
audit or trackers hold after the job, what torch itself measured, and the error it raised.

Modes: "reduce" (gradients summed through the group), "nan" (NaN fed at step 1 by rank 1; in
one process, by the one run as rank 1), "die" (rank 1 exits before step 1's merge), "embedding"
(an EmbeddingTracker and an EmbeddingHub table over each rank's share of the lookups), "gil"
(each gradscope call that meets the group made while a Python-owned tensor's all-reduce is
still running on Gloo's worker thread: see gil_job).
"""
import sys
import time

_START = time.monotonic()


def log(what):
    """Progress on stderr (the test shows it when a rank fails or hangs)."""
    print(f"[{time.monotonic() - _START:6.2f} s] {what}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    log("started")
import datetime  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import gradscope  # noqa: E402

ROWS = 4     # rows of the batch each rank takes
STEPS = 3


def model():
    torch.manual_seed(1)  # every rank starts from the same weights
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).double()


def job_batch(step, world):
    """Step `step`'s batch of the whole job: the same on every rank, which takes its own rows."""
    torch.manual_seed(100 + step)
    return torch.randn(world * ROWS, 6, dtype=torch.float64) * 2


def sum_gradients(module):
    """The gradient all-reduce of data-parallel training. Summed, not averaged as DDP does, so
    that with the summed loss below every rank's gradient is the one process's (up to rounding)
    and so are the output gradients (averaging needs a mean loss, which scales each rank's
    output gradients by its share of the batch instead of the job's)."""
    for p in module.parameters():
        dist.all_reduce(p.grad)


def stats_dict(s):
    return {k: getattr(s, k) for k in ("count", "finite", "nan", "pos_inf", "neg_inf", "zero", "saturated", "sum",
                                       "sum_sq", "sum_abs", "min", "max", "max_abs")}


def audit_job(mode, rank, world, job, group, out):
    single = group is None
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    # Every rank names a run and a TensorBoard directory of its own: only rank 0's may appear.
    audit = gradscope.Audit(net, run=os.path.join(out, f"run{rank}"), tensorboard=os.path.join(out, f"tb{rank}"),
                            process_group=group, ranks_average_gradients=False)  # summed, below
    acts = []  # torch's own view of node '0' (the Tanh after the first Linear): count, min, max
    net[1].register_forward_hook(lambda m, i, o: acts.append([o.numel(), o.min().item(), o.max().item()]))
    error, seconds = None, None
    try:
        for step in range(STEPS):
            x = job_batch(step, job)
            if not single:
                x = x[rank * ROWS:(rank + 1) * ROWS].clone()
            if mode == "nan" and rank == 1 and step == 1:
                x[1, 3] = float("nan")
            opt.zero_grad()
            y = net(x)
            (y * y).sum().mul(0.5).backward()
            if not single:
                sum_gradients(net)
            if mode == "die" and rank == 1 and step == 1:
                os._exit(7)
            start = time.monotonic()
            try:
                audit.step(opt)
            except gradscope.Error as e:
                error, seconds = str(e), time.monotonic() - start
                break
    finally:
        audit.close()
    origin = audit.report().nonfinite_origin
    return {
        "records": [[r.step, r.node, r.site, stats_dict(r.stats)] for r in audit.records()],
        "torch_acts": acts,
        "origin": None if origin is None else [origin.step, origin.node, origin.site, origin.rank],
        "error": error,
        "seconds": seconds,
    }


def embedding_job(rank, job, group):
    """Two tables, one on an EmbeddingTracker and one in an EmbeddingHub, each rank looking up
    every job-th id of the step's lookups (and negatives for the hub's table)."""
    torch.manual_seed(2)
    items, users = nn.Embedding(40, 4), nn.Embedding(30, 4)
    opt = torch.optim.SGD(list(items.parameters()) + list(users.parameters()), lr=0.1)
    tracker = gradscope.EmbeddingTracker(items, name="items", process_group=group)
    hub = gradscope.EmbeddingHub()
    hub_users = hub.track(users, name="users", process_group=group)
    for step in range(STEPS):
        g = torch.Generator().manual_seed(10 + step)
        ids = torch.randint(0, 40, (12,), generator=g) % (10 + 10 * step)  # skewed: repeats
        uids = torch.randint(0, 30, (8,), generator=g)
        negs = torch.randint(0, 30, (4,), generator=g)
        share = slice(None) if group is None else slice(rank, None, job)
        opt.zero_grad()
        loss = items(ids[share]).pow(2).sum() + users(uids[share]).sum()
        with hub_users.negatives():
            loss = loss + users(negs[share]).sum()
        loss.backward()
        if group is not None:
            for p in (items.weight, users.weight):
                dist.all_reduce(p.grad)
        tracker.before_step()
        hub.step(opt)  # the hub runs opt.step() for both tables
        tracker.after_step()
    result = {"items": tracker.row_counts(), "users": hub_users.row_counts(),
              "items_stats": tracker.report()["embedding_stats"]}
    tracker.close()
    hub.close()
    return result


def orphaned_all_reduces(rank):
    """Starts two all-reduces of tensors Python then lets go of, so that Gloo's two worker
    threads hold the last references. Rank 1 starts late, so rank 0's are still running when
    rank 0 goes on to the next gradscope call: when they end, each worker needs the GIL to free
    a tensor's Python object (one of them while it holds the group's queue lock). A gradscope
    call that waited on the group holding the GIL deadlocked with them (seen first with the
    gradient all-reduce of data-parallel training)."""
    if rank == 1:
        time.sleep(1.0)
    for _ in range(2):
        t = torch.ones(1 << 16)
        dist.all_reduce(t, async_op=True)
        del t


def gil_job(rank, world, job, group, out):
    """Each kind of gradscope call that meets the group, right after orphaned_all_reduces()."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    orphaned_all_reduces(rank)
    audit = gradscope.Audit(net, run=os.path.join(out, f"run{rank}"), process_group=group)
    orphaned_all_reduces(rank)
    tracker = gradscope.EmbeddingTracker(nn.Embedding(10, 2), name="items", process_group=group)
    orphaned_all_reduces(rank)
    hub = gradscope.EmbeddingHub()
    users = nn.Embedding(6, 2)
    hub.track(users, name="users", process_group=group)
    for step in range(STEPS):
        x = job_batch(step, job)[rank * ROWS:(rank + 1) * ROWS].clone()
        opt.zero_grad()
        (net(x) ** 2).sum().backward()
        sum_gradients(net)
        if step == 0:
            orphaned_all_reduces(rank)
        audit.step(opt)
        users(torch.tensor([step, rank])).sum().backward()
        if step == 0:
            orphaned_all_reduces(rank)
        hub.step(lambda: None)
    audit.close()
    orphaned_all_reduces(rank)
    report = audit.report()
    tracker.close()
    hub.close()
    return {"steps": report.steps}


def run(modes, rank, world, out):
    """Runs each of the comma-separated `modes` in turn in DIR/<mode>, with one group (one torch
    import and one rendezvous a rank, which is most of a job's time). world 0: one process fed
    every rank's rows, the job's world read from the modes ("reduce:2"); returns the last result."""
    single = world == 0
    modes, job = (modes.split(":")[0], int(modes.split(":")[1])) if single else (modes, world)
    group = None
    if not single:
        # Rendezvous with a generous timeout (ranks start seconds apart on a busy machine); the
        # group that bounds a dead or stalled rank has the short one.
        log("imported")
        dist.init_process_group("gloo", init_method="file://" + os.path.join(out, "store"), rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=120))
        log("joined the group")
    for mode in modes.split(","):
        where = os.path.join(out, mode)
        os.makedirs(where, exist_ok=True)
        if not single:
            group = dist.new_group(timeout=datetime.timedelta(seconds=3)) if mode == "die" else True
        if mode == "embedding":
            result = embedding_job(rank, job, group)
        elif mode == "gil":
            result = gil_job(rank, world, job, group, where)
        else:
            result = audit_job(mode, rank, world, job, group, where)
        with open(os.path.join(where, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        if not single:
            log(f"{mode} done")
    return result


if __name__ == "__main__":
    # A rank that hangs prints where, before the test's timeout kills it (the test shows it).
    # The limit counts from the start, imports included (they take most of it on a busy machine).
    limit = float(os.environ.get("GRADSCOPE_RANK_TIMEOUT", "35")) - (time.monotonic() - _START)
    faulthandler.dump_traceback_later(max(1.0, limit), exit=True)
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    sys.stdout.flush()
    # Skip the process group's teardown: with a dead peer it can wait; nothing is left to write.
    os._exit(0)
