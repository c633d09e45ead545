"""gradscope.optim: trains as torch.optim does, measures for the audit what the audit measures
itself, and is a torch.optim.Optimizer (schedulers, state_dict)."""
import copy

import numpy as np
import pytest
import torch
from torch import nn

import gradscope


def digits(digits_csv):
    data = np.loadtxt(digits_csv, delimiter=",", dtype=np.float32)
    x = torch.from_numpy(data[:, :64])
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return x, torch.from_numpy(data[:, 64]).long()


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


CASES = [
    (gradscope.optim.Adam, torch.optim.Adam, dict(lr=1e-3)),
    (gradscope.optim.Adam, torch.optim.Adam, dict(lr=1e-3, weight_decay=1e-2)),
    (gradscope.optim.AdamW, torch.optim.AdamW, dict(lr=1e-3)),
    (gradscope.optim.SGD, torch.optim.SGD, dict(lr=0.1)),
    (gradscope.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
]


@pytest.mark.parametrize("ours,theirs,options", CASES)
def test_trains_as_torch_optim_over_200_digits_steps(digits_csv, ours, theirs, options):
    x, y = digits(digits_csv)
    a, b = mlp(1), mlp(1)
    opt_a, opt_b = ours(a.parameters(), **options), theirs(b.parameters(), **options)
    worst = 0.0
    for step in range(200):
        rows = slice((step * 64) % (len(x) - 64), (step * 64) % (len(x) - 64) + 64)
        for net, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x[rows]), y[rows]).backward()
            opt.step()
        for p, q in zip(a.parameters(), b.parameters()):
            worst = max(worst, float((p - q).abs().max() / q.abs().max()))
    assert 0 < worst < 2e-6, worst  # not bit-equal: PyTorch's vectorised add uses FMA


def test_amsgrad_is_torch_adam_bit_for_bit():
    a, b = mlp(2), mlp(2)
    opt_a = gradscope.optim.Adam(a.parameters(), lr=1e-2, amsgrad=True)
    opt_b = torch.optim.Adam(b.parameters(), lr=1e-2, amsgrad=True)
    x = torch.randn(16, 64)
    for _ in range(20):
        for net, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            opt.step()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def stats_of(record):
    s = record.stats
    return (s.count, s.finite, s.nan, s.zero, s.saturated, s.min, s.max, s.max_abs), (s.sum, s.sum_sq, s.sum_abs)


@pytest.mark.parametrize("ours,options", [(gradscope.optim.Adam, dict(lr=1e-2, weight_decay=1e-3)),
                                          (gradscope.optim.AdamW, dict(lr=1e-2)),
                                          (gradscope.optim.SGD, dict(lr=0.05, momentum=0.9))])
def test_its_statistics_are_the_audits_own_measurement(ours, options):
    """One model audited through audit.step(opt) (the fused pass measures), one through
    audit.step(function) (the audit measures before and after): the same records."""
    a, b = mlp(4), mlp(4)
    opt_a, opt_b = ours(a.parameters(), **options), ours(b.parameters(), **options)
    audit_a, audit_b = gradscope.Audit(a), gradscope.Audit(b)
    torch.manual_seed(5)
    for _ in range(5):
        x = torch.randn(32, 64)
        for net, opt, audit in ((a, opt_a, audit_a), (b, opt_b, audit_b)):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
        audit_a.step(opt_a)
        audit_b.step(lambda: opt_b.step())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    ra = [r for r in audit_a.records() if r.site in ("param", "param_grad", "update")]
    rb = [r for r in audit_b.records() if r.site in ("param", "param_grad", "update")]
    assert len(ra) == len(rb) == 3 * 3 * 5
    for r, s in zip(ra, rb):
        assert (r.step, r.node, r.site) == (s.step, s.node, s.site)
        exact_a, sums_a = stats_of(r)
        exact_b, sums_b = stats_of(s)
        assert exact_a == exact_b
        assert sums_a == pytest.approx(sums_b, rel=1e-12)


def test_schedulers_and_state_dict_work_as_with_torch_optim():
    a = mlp(6)
    opt = gradscope.optim.Adam(a.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    x = torch.randn(8, 64)
    for _ in range(4):
        opt.zero_grad()
        a(x).pow(2).sum().backward()
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(2.5e-3)
    # The state loads into torch.optim.Adam, which then continues as ours would.
    b = mlp(6)
    b.load_state_dict(a.state_dict())
    theirs = torch.optim.Adam(b.parameters(), lr=1e-2)
    # A copy, as a checkpoint saved and loaded is: torch 2.x's load_state_dict keeps the tensors
    # it is given, so both optimizers would otherwise update one set of moments.
    theirs.load_state_dict(copy.deepcopy(opt.state_dict()))
    for net, o in ((a, opt), (b, theirs)):
        o.zero_grad()
        net(x).pow(2).sum().backward()
        o.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert float((p - q).abs().max()) <= 1e-6 * float(q.abs().max())
    assert int(opt.state[next(iter(a.parameters()))]["step"]) == 5


@pytest.mark.parametrize("ours,theirs,options", [(gradscope.optim.Adam, torch.optim.Adam, dict(lr=1e-2)),
                                                   (gradscope.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2)),
                                                   (gradscope.optim.SGD, torch.optim.SGD,
                                                    dict(lr=0.05, momentum=0.9, weight_decay=1e-3))])
def test_maximize_ascends_as_torch_optim_given_or_loaded(ours, theirs, options):
    """maximize=True, given to the constructor or loaded from torch.optim's state_dict, ascends
    the objective as torch.optim does (it was kept in the group and ignored: the loss fell), and
    audited steps stay measured."""
    x = torch.randn(16, 64)
    ref, given, loaded = mlp(8), mlp(8), mlp(8)
    opt_ref = theirs(ref.parameters(), maximize=True, **options)
    opt_given = ours(given.parameters(), maximize=True, **options)
    opt_loaded = ours(loaded.parameters(), **options)
    opt_loaded.load_state_dict(theirs(mlp(8).parameters(), maximize=True, **options).state_dict())
    assert opt_loaded.param_groups[0]["maximize"] is True
    audit = gradscope.Audit(loaded)
    objective = []
    for _ in range(5):
        for net, opt in ((ref, opt_ref), (given, opt_given), (loaded, opt_loaded)):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
            if net is loaded:
                audit.step(opt)
            else:
                opt.step()
        objective.append(float(ref(x).pow(2).mean()))
    assert objective[-1] > objective[0]  # ascended
    for net in (given, loaded):
        for p, q in zip(net.parameters(), ref.parameters()):
            assert float((p - q).abs().max()) <= 1e-6 * float(q.abs().max())
    updates = [r for r in audit.records() if r.site == "update"]
    assert len(updates) == 3 * 5 and all(r.stats.count > 0 for r in updates)
    audit.close()


def test_a_state_in_another_layout_is_measured_by_the_audit():
    """A moment loaded in a transposed layout: that parameter takes PyTorch's path and the audit
    measures it itself (before, the audit waited for statistics the pass never made)."""
    net = mlp(7)
    opt = gradscope.optim.Adam(net.parameters(), lr=1e-2)
    audit = gradscope.Audit(net)
    x = torch.randn(8, 64)
    for step in range(2):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        if step == 1:
            w = net[0].weight
            opt.state[w]["exp_avg"] = opt.state[w]["exp_avg"].t().contiguous().t()
        audit.step(opt)
    assert audit.report().steps == 2
    assert not opt._gradscope_passes.fuses(net[0].weight)
    assert opt._gradscope_passes.fuses(net[0].bias)
