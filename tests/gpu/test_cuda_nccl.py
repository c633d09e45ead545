"""process_group= with NCCL, one rank (python/gradscope/_distributed.py; the engine's merge is
src/torch/distributed/rank_merge.cpp): an audit of a model on the GPU whose statistics go
through a one-rank NCCL group reports what the same audit reports with no group, and its run
file records the job. Twice: a pure NCCL group, and the "cpu:gloo,cuda:nccl" group a job gets
when it wants collectives of CPU tensors too. Each job runs in a process of its own
(nccl_worker.py) under a timeout. In the stand-in run, Gloo on the CPU takes NCCL's place beside a CPU
backend ("gloo"); a pure NCCL group, which has no CPU backend and so merges on the current CUDA
device, has no stand-in on a CPU-only torch (tests/torch/distributed_test.cpp checks which
device each kind of group merges on)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from compare import assert_records_close, assert_tree_close
from conftest import STANDIN

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 180  # seconds for the whole job, imports included


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job(backend, device, tmp_path):
    out = str(tmp_path / "rank0.json")
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "nccl_worker.py"), backend, str(device),
                            str(free_port()), out], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the one-rank {backend} job hung past {TIMEOUT} s:\n{e.stdout}\n{e.stderr}")
    assert os.path.exists(out), (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    with open(out) as f:
        result = json.load(f)
    if result["error"] is not None:  # its first lines: a c10 error carries a long C++ stack after them
        pytest.fail(f"the one-rank {backend} job failed: " + "\n".join(result["error"].splitlines()[:2]),
                    pytrace=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return result


# (the backend on a GPU, its stand-in on the CPU)
BACKENDS = [("nccl", "cuda:gloo"), ("cpu:gloo,cuda:nccl", "gloo")]


@pytest.mark.parametrize("backend,standin", BACKENDS, ids=[b for b, _ in BACKENDS])
def test_a_one_rank_group_reports_what_no_group_reports(device, backend, standin, tmp_path):
    if STANDIN and backend == "nccl":
        # A group with no backend for CPU tensors merges on the current CUDA device
        # (gradscope::torch::collective_device): nothing on a CPU-only torch can stand in for it.
        pytest.skip("not run: a group without a CPU backend merges on CUDA, absent here")
    r = job(standin if STANDIN else backend, device, tmp_path)
    group, alone = r["group"], r["alone"]
    to_dict = lambda rs: {tuple(x[:3]): x[3] for x in rs}  # noqa: E731
    got, want = to_dict(group["records"]), to_dict(alone["records"])
    assert len(want) >= 4 * 5
    # One rank merges its own statistics: nothing but the bits it sent comes back.
    assert_records_close(got, want, 1e-12, backend)
    assert group["flags"] == alone["flags"]
    assert_tree_close(group["report"], alone["report"], rel=1e-12)
    assert r["run"]["world_size"] == 1
    wanted = ("gloo",) if STANDIN else ("nccl",)
    assert any(b in r["run"]["backend"] for b in wanted), r["run"]
