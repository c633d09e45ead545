"""Audit: nodes, values of the records, the report in every form, step vs after_step, sampling."""
import json
import math

import pytest
import torch
from torch import nn

import gradscope
from models import batches, mlp, train


def test_nodes_are_the_children_with_parameters_in_execution_order():
    model = mlp()
    with gradscope.Audit(model) as audit:
        train(model, batches(2), audit)
    assert audit.node_ids() == ["fc1", "fc2", "out"]
    arch = {n.id: (n.type, n.parameters, n.order) for n in audit.architecture()}
    assert arch == {"fc1": ("Linear", 8 * 16 + 16, 0), "fc2": ("Linear", 16 * 16 + 16, 1),
                    "out": ("Linear", 16 * 3 + 3, 2)}


def test_records_hold_the_values_of_the_tensors_they_measure():
    model = mlp()
    x, y = batches(1)[0]
    with torch.no_grad():
        group1 = model.relu1(model.fc1(x)).double()  # fc1's group ends after its ReLU
        pre2 = model.fc2(model.relu1(model.fc1(x))).double()  # fc2 is followed by tanh
        before = [p.detach().clone().double() for p in model.out.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with gradscope.Audit(model) as audit:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        grads = [p.grad.detach().clone().double() for p in model.out.parameters()]
        audit.step(opt)
    rec = {(r.node, r.site): r.stats for r in audit.records()}
    act = rec[("fc1", "activation")]
    assert act.count == group1.numel() and act.zero == int((group1.abs() <= 1e-7).sum())
    assert math.isclose(act.sum, group1.sum().item(), rel_tol=1e-12)
    assert act.max == group1.max().item()
    pre = rec[("fc2", "pre_activation")]
    assert pre.count == pre2.numel() and pre.min == pre2.min().item() and pre.max == pre2.max().item()
    g = torch.cat([t.flatten() for t in grads])
    pg = rec[("out", "param_grad")]
    assert pg.count == g.numel() and math.isclose(pg.sum_sq, g.pow(2).sum().item(), rel_tol=1e-12)
    after = [p.detach().double() for p in model.out.parameters()]
    delta = torch.cat([(a - b).flatten() for a, b in zip(after, before)])
    up = rec[("out", "update")]
    assert math.isclose(up.l2, delta.norm().item(), rel_tol=1e-6)
    assert math.isclose(up.l2, 0.5 * g.norm().item(), rel_tol=1e-6)  # SGD: update = -lr x grad
    out_grad = rec[("out", "output_grad")]
    assert out_grad.count == 32 * 3


def test_after_step_measures_the_same_as_step():
    a, b = mlp(), mlp()
    data = batches(6)
    with gradscope.Audit(a) as audit_a:
        train(a, data, audit_a)
    with gradscope.Audit(b) as audit_b:
        train(b, data, audit_b, after_step=True)
    ra = {(r.step, r.node, r.site): (r.stats.count, r.stats.sum, r.stats.sum_sq) for r in audit_a.records()}
    rb = {(r.step, r.node, r.site): (r.stats.count, r.stats.sum, r.stats.sum_sq) for r in audit_b.records()}
    assert ra == rb
    assert any(site == "update" for _, _, site in ra)


def test_after_step_without_a_forward_through_the_model_is_an_error():
    model = mlp()
    with gradscope.Audit(model) as audit:
        with pytest.raises(gradscope.Error, match="after_step\\(\\): the model's forward did not run"):
            audit.after_step()


def test_sample_every_audits_every_nth_step_only():
    model = mlp()
    with gradscope.Audit(model, sample_every=10) as audit:
        train(model, batches(25), audit)
    assert sorted({r.step for r in audit.records()}) == [0, 10, 20]
    assert audit.current_step == 25


def test_report_forms_agree():
    model = mlp()
    with gradscope.Audit(model) as audit:
        train(model, batches(12), audit)
    report = audit.report()
    text = str(report)
    assert text.splitlines()[0].split()[0] == "node" and "verdict: healthy (3 nodes, 12 steps)" in text
    d = report.to_dict()
    assert d == json.loads(report.to_json())
    nodes = d["gradscope_report"]["nodes"]
    assert [n["node"] for n in nodes] == ["fc1", "fc2", "out"]
    assert math.isclose(nodes[0]["param_grad_l2"], report.node("fc1").param_grad_l2, rel_tol=1e-12)
    assert report.to_csv().splitlines()[0].startswith("node,")
    assert report.flags() == {"fc1": ["HEALTHY"], "fc2": ["HEALTHY"], "out": ["HEALTHY"]}
    with pytest.raises(KeyError, match="no node 'nope'"):
        report.node("nope")


def test_to_dataframe_uses_pandas_or_says_it_is_missing():
    model = mlp()
    with gradscope.Audit(model) as audit:
        train(model, batches(3), audit)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            audit.report().to_dataframe()
        return
    df = audit.report().to_dataframe()
    assert list(df["node"]) == ["fc1", "fc2", "out"] and list(df["steps"]) == [3, 3, 3]


def dying_relu_model():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
    with torch.no_grad():
        model[2].bias.fill_(-10.0)
    return model


def test_assert_healthy_raises_health_error_naming_the_worst_node():
    model = dying_relu_model()
    with gradscope.Audit(model) as audit:
        train(model, batches(15), audit, lr=1e-3)
    assert "DEAD" in audit.report().node("2").flags
    with pytest.raises(gradscope.HealthError, match="'2'|2 \\[") as e:
        audit.assert_healthy()
    assert isinstance(e.value, gradscope.Error) and "DEAD" in str(e.value)
    assert audit.report().flagged()[0] == "2"
    healthy = mlp()
    with gradscope.Audit(healthy) as audit:
        train(healthy, batches(12), audit)
    audit.assert_healthy()  # does not raise


def test_custom_forward_taps_and_free_nodes():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(8, 8)
            self.head = nn.Linear(8, 3)

        def forward(self, x, audit):
            h = audit.tap("scores", self.enc(x).relu())
            return self.head(h)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with gradscope.Audit(model, free_nodes=["scores"]) as audit:
        x, y = batches(1)[0]
        opt.zero_grad()
        nn.functional.cross_entropy(model(x, audit), y).backward()
        audit.step(opt)
    sites = {(r.node, r.site) for r in audit.records()}
    assert ("scores", "activation") in sites and ("scores", "output_grad") in sites
    assert ("enc", "activation") in sites  # enc's own forward hook
