"""FSDP2 (fully_shard): each rank holds a shard of every parameter and of its gradient; the audit
measures the shards and merges them into the whole parameter. At 2 and 4 ranks (Gloo over
loopback), every rank's merged records of the parameter sites equal the statistics torch computes
from the whole parameter (full_tensor(), gathered without gradscope): counts, zeros, min and max
exactly, sums to 1e-9 relative (another order of the same double sums). Judged as a node, a
shard would count a fraction of the elements and fail. Against one unsharded process fed every
rank's rows: every record to 1e-4 (FSDP's reduce-scatter sums the gradients in another order),
and the same flags, the planted faults named on the same node and step."""
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fsdp_worker as worker  # noqa: E402
from conftest import run_docs_example  # noqa: E402
from test_distributed import read, run_job  # noqa: E402

PARAM_SITES = ("param_grad", "param", "update")


def run_ranks(case, world, out):
    codes, logs = run_job(case, world, out, "fsdp_worker.py")
    assert codes == [0] * world, logs
    return [read(out, r) for r in range(world)]


def keyed(records):
    return {(step, node, site): s for step, node, site, s in records}


def close(a, b, rel):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def check_against_truth(got, truth):
    """The merged parameter sites against torch's statistics of the whole tensors."""
    records = keyed(got["records"])
    for step, node, site, t in truth:
        r = records[(step, node, site)]
        assert (r["count"], r["zero"], r["nan"]) == (t["count"], t["zero"], t["nan"]), (step, node, site, r, t)
        if t["min"] is not None:
            # An update is after - before: the engine subtracts in the parameter's dtype or in
            # double; a last bit either way.
            rel = 1e-6 if site == "update" else 0
            assert close(r["min"], t["min"], rel) and close(r["max"], t["max"], rel), (step, node, site, r, t)
        rel = 1e-6 if site == "update" else 1e-9
        assert close(r["sum"], t["sum"], rel) and close(r["sum_sq"], t["sum_sq"], rel), (step, node, site, r, t)


def check_against_one_process(got, single, values=True):
    """values=False: counts and flags only (a bf16 forward against the fp32 one)."""
    a, b = keyed(got["records"]), keyed(single["records"])
    assert a.keys() == b.keys()
    for key in a:
        for field in ("count", "finite", "nan", "zero") if values else ("count", "nan"):
            assert a[key][field] == b[key][field], (key, field, a[key], b[key])
        for field in ("sum", "sum_sq", "min", "max") if values else ():
            assert close(a[key][field], b[key][field], 1e-4) or abs(a[key][field] - b[key][field]) < 1e-6, \
                (key, field, a[key], b[key])
    assert got["flags"] == single["flags"]
    assert got["origin"][:3] == single["origin"][:3] if single["origin"] else got["origin"] is None


@pytest.mark.parametrize("case,world", [("fsdp", 2), ("fsdp", 4), ("keep", 2), ("bf16", 2), ("dead", 2),
                                        ("after", 2)])
def test_sharded_parameters_are_judged_whole(case, world, tmp_path):
    ranks = run_ranks(case, world, tmp_path)
    single = worker.run(case, 0, world, str(tmp_path))
    check_against_truth(single, single["truth"])  # the truth's own check, in one process
    for rank, got in enumerate(ranks):
        assert got["truth"] == ranks[0]["truth"], rank  # full_tensor() is the same on every rank
        check_against_truth(got, got["truth"])
        check_against_one_process(got, single, values=case != "bf16")
        assert got["flags"] == ranks[0]["flags"] and got["records"] == ranks[0]["records"], rank
    if case == "dead":
        # The dead ReLU: every shard of node '0''s gradient is zeros of one size (the same bits on
        # both ranks), and still both halves count.
        assert ranks[0]["flags"]["0"] == single["flags"]["0"] and "DEAD" in single["flags"]["0"], single["flags"]
    else:
        assert all(f == ["HEALTHY"] for f in single["flags"].values()), single["flags"]


def test_a_nan_in_one_ranks_rows_is_named_with_that_rank(tmp_path):
    ranks = run_ranks("nan", 2, tmp_path)
    single = worker.run("nan", 0, 2, str(tmp_path))
    assert single["origin"] == [1, "0", "activation", -1], single["origin"]
    for got in ranks:
        assert got["origin"] == [1, "0", "activation", 1], got["origin"]  # rank 1's rows carried it
        assert got["flags"] == single["flags"] and "NAN" in got["flags"]["0"], got["flags"]


def test_ranks_with_another_model_get_an_error_naming_it_not_a_hang(tmp_path):
    ranks = run_ranks("other", 2, tmp_path)
    for got in ranks:  # at construction, before FSDP's first all-gather would meet other sizes
        assert "ranks disagree on the nodes" in got["error"], got["error"]
        assert "Float[8, 8] sharded" in got["error"] and "Float[9, 8] sharded" in got["error"], got["error"]


def sharded_model(case="fsdp"):
    net = worker.model(case)
    worker.shard(net, case)
    return net


@pytest.mark.parametrize("sample_every", [1, 2])
def test_a_world_of_one_equals_the_unsharded_process(world_of_one, tmp_path, sample_every):
    import torch
    import gradscope
    runs = []
    for net, group in ((sharded_model(), True), (worker.model("fsdp"), None)):
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        audit = gradscope.Audit(net, process_group=group, sample_every=sample_every)
        for step in range(worker.STEPS):
            opt.zero_grad()
            net(worker.job_batch(step, 1)).pow(2).mean().backward()
            audit.step(opt)
        audit.close()
        runs.append({(r.step, r.node, r.site): worker.stats_dict(r.stats) for r in audit.records()})
    assert runs[0] == runs[1]  # one shard is the whole parameter: the same bits


def test_sharded_parameters_without_a_group_or_with_what_cannot_merge_are_errors(world_of_one):
    import gradscope
    net = sharded_model()
    with pytest.raises(gradscope.Error, match=r"parameter '0.weight' is a DTensor .* pass process_group=True"):
        gradscope.Audit(net)
    with pytest.raises(gradscope.Error, match="gradient_snr is not merged across shards"):
        gradscope.Audit(net, process_group=True, gradient_snr=True)
    audit = gradscope.Audit(net, process_group=True)
    opt = gradscope.optim.Adam(net.parameters(), lr=1e-3)
    net(worker.job_batch(0, 1)).pow(2).mean().backward()
    with pytest.raises(gradscope.Error, match="fused passes do not take DTensor parameters"):
        audit.step(opt)
    audit.close()
    assert not any(r.site == "param_grad" for r in audit.records())  # refused before measuring


def test_the_fsdp_example_of_the_docs_runs_under_torchrun(tmp_path):
    run_docs_example("fsdp-example", 2, tmp_path)
    assert os.path.exists(tmp_path / "runs" / "fsdp" / "run.db")


def test_the_engines_parameter_shards_are_checked(world_of_one):
    """AuditOptions::parameter_shards as the C++ engine takes it (the Python Audit fills it)."""
    import torch
    import torch.distributed as dist
    from gradscope import _engine

    def engine(shards, group):
        o = _engine.AuditOptions()
        o.parameter_shards = shards
        if group:
            o.process_group = dist.group.WORLD
        weight = torch.nn.Parameter(torch.zeros(2, 3))
        return _engine.AuditEngine([("x", "Linear", [], [("weight", weight)])], o, None, None)

    with pytest.raises(_engine.Error, match="parameter_shards needs a process_group"):
        engine({"x.weight": _engine.ParameterShard([4, 3])}, False)
    with pytest.raises(_engine.Error, match=r"parameter_shards names 'x.bias', which is no audited parameter "
                                            r"\(parameters: 'x.weight'\)"):
        engine({"x.bias": _engine.ParameterShard([4])}, True)
    with pytest.raises(_engine.Error, match="negative dimension"):
        engine({"x.weight": _engine.ParameterShard([-1, 3])}, True)
    shard = _engine.ParameterShard([4, 3], counted=False)
    assert (shard.shape, shard.counted) == ([4, 3], False)
    engine({"x.weight": shard}, True)  # accepted


@pytest.mark.parametrize("name, planted", [("dying-relu", ("fc2", "DEAD", 0)), ("nan-later", ("logfeat", "NAN", 20)),
                                           ("healthy-mlp", None),
                                           ("gpt-unstable", ("blocks.0.attn", "ATTENTION_LOGIT_GROWTH", 20))])
def test_the_demos_planted_faults_are_named_on_the_same_node_and_step_under_fsdp(name, planted, tmp_path):
    import fsdp_scenarios
    codes, logs = run_job(name, 2, tmp_path, "fsdp_scenarios.py")
    assert codes == [0, 0], logs
    single = fsdp_scenarios.run(name, 0, 0, str(tmp_path))
    if planted:  # the fault is there to find, in one process
        node, flag, step = planted
        assert single["first"][node].get(flag) == step, single
    else:
        assert all(f == ["HEALTHY"] for f in single["flags"].values()), single
    for rank in range(2):
        got = read(tmp_path, rank)
        for key in ("flags", "flagged", "first"):
            assert got[key] == single[key], (rank, key, got[key], single[key])
        if single["origin"] is None:
            assert got["origin"] is None
        else:  # the NaN comes from rank 0's shard of the bias, on every rank's rows: rank 0 saw it first
            assert got["origin"] == single["origin"][:3] + [0], (got["origin"], single["origin"])
