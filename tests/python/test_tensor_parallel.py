"""Tensor parallelism (parallelize_module with ColwiseParallel and RowwiseParallel): every rank
runs the same batches through its slice of the layers. At 2 ranks (Gloo over loopback) every
rank's merged records equal one unsharded process's: the parameters whole (each rank's shard of
a split weight, the replicated bias once), the activations of a column-parallel layer whole (two
slices of its features add up), the all-reduced output of a row-parallel layer once, and the
attention heads concatenated in rank order, so that a collapsing head is named as it is in one
process (head 3, whose logits grow, which rank 1 computes). Judged per rank, a slice would count half the features
and the replicated outputs twice, and the heads would be two."""
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tp_worker as worker  # noqa: E402
from conftest import run_docs_example  # noqa: E402
from test_distributed import read, run_job  # noqa: E402


def keyed(records):
    return {(step, node, site): s for step, node, site, s in records}


def close(got, want, field):
    """To float32 rounding of another summation order (the row-parallel all-reduce): relative
    to the magnitudes summed (sum_abs for a sum, max_abs for min and max), not to a sum that
    cancels."""
    scale = {"sum": want["sum_abs"], "min": want["max_abs"], "max": want["max_abs"]}.get(field, abs(want[field]))
    return math.isclose(got[field], want[field], rel_tol=1e-4) or abs(got[field] - want[field]) <= 1e-4 * scale


@pytest.mark.parametrize("case", ["healthy", "growth"])
def test_a_tensor_parallel_block_is_judged_as_the_whole_layer(case, tmp_path):
    codes, logs = run_job(case, 2, tmp_path, "tp_worker.py")
    assert codes == [0, 0], logs
    single = worker.run(case, 0, 0, str(tmp_path))
    want = keyed(single["records"])
    # The one process's counts: a layer's elements, not a rank's slice.
    assert want[(0, "block.fc1", "activation")]["count"] == worker.BATCH * worker.T * 2 * worker.D
    assert want[(0, "block.attn", "param_grad")]["count"] == 4 * (worker.D * worker.D + worker.D)
    for rank in range(2):
        got = read(tmp_path, rank)
        have = keyed(got["records"])
        assert have.keys() == want.keys(), (rank, sorted(set(have) ^ set(want)))
        for key, w in want.items():
            g = have[key]
            for field in ("count", "finite", "nan"):
                assert g[field] == w[field], (rank, key, field, g, w)
            for field in ("sum", "sum_sq", "sum_abs", "min", "max", "max_abs"):
                assert close(g, w, field), (rank, key, field, g[field], w[field])
        assert got["flags"] == single["flags"], (rank, got["flags"], single["flags"])
        assert got["evidence"] == single["evidence"], (rank, got["evidence"], single["evidence"])
    if case == "growth":
        assert "ATTENTION_LOGIT_GROWTH" in single["flags"]["block.attn"], single["flags"]
        assert any("head 3" in e for e in single["evidence"]["block.attn"]), single["evidence"]
    else:
        assert all(f == ["HEALTHY"] for f in single["flags"].values()), single["flags"]


def test_a_world_of_one_is_the_unsharded_model(world_of_one, tmp_path):
    got = worker.run("healthy", 0, 1, str(tmp_path))  # parallelized over the one rank
    want = worker.run("healthy", 0, 0, str(tmp_path), parallel=False)
    assert keyed(got["records"]) == keyed(want["records"])
    assert got["evidence"] == want["evidence"]


def test_tensor_parallelism_with_fully_shard_is_refused_not_merged_wrong(world_of_one):
    import gradscope
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    net = worker.model()
    parallelize_module(net.block, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    fully_shard(net, mesh=mesh["dp"])
    with pytest.raises(gradscope.Error, match="tensor-parallel on a device mesh that also splits the batch"):
        gradscope.Audit(net, process_group=True)


def test_a_node_that_returns_a_dtensor_is_an_error_naming_it(world_of_one):
    import torch
    import gradscope
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module
    net = worker.model()
    parallelize_module(net.block, init_device_mesh("cpu", (1,)), {"fc1": ColwiseParallel(use_local_output=False)})
    audit = gradscope.Audit(net.block, nodes=["fc1"], process_group=True)
    with pytest.raises(gradscope.Error, match=r"node 'fc1' returned a DTensor.*use_local_output=True"):
        net.block.fc1(torch.randn(2, worker.D))
    audit.close()


def test_the_tensor_parallel_example_of_the_docs_runs_under_torchrun(tmp_path):
    run_docs_example("tp-example", 2, tmp_path)
    assert os.path.exists(tmp_path / "runs" / "tp" / "run.db")
