"""One engine: the Python audit's records equal the C++ audit's, bit for bit, on the same
seeded model (PyTorch and LibTorch share the RNG and the kernels here)."""
import collections

import torch
from torch import nn

import gradscope
from conftest import run_json

SEED, STEPS = 11, 5


def python_records():
    torch.manual_seed(SEED)
    net = nn.Sequential(collections.OrderedDict([
        ("fc1", nn.Linear(16, 32)), ("tanh", nn.Tanh()), ("fc2", nn.Linear(32, 32)), ("relu", nn.ReLU()),
        ("out", nn.Linear(32, 4))]))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with gradscope.Audit(net) as audit:
        for _ in range(STEPS):
            x = torch.randn(8, 16) * 3
            y = torch.randn(8, 4)
            opt.zero_grad()
            (net(x) - y).pow(2).mean().backward()
            audit.step(opt)
    return audit.records()


def test_records_equal_the_cpp_audit_on_the_same_model(cpp_reference):
    cpp = {(r["step"], r["node"], r["site"]): r for r in run_json([cpp_reference, "parity", str(SEED), str(STEPS)])}
    py = {(r.step, r.node, r.site): r.stats for r in python_records()}
    assert len(cpp) == STEPS * 3 * 5 + STEPS  # 3 nodes x 5 sites, and fc1's pre-activation
    assert set(py) == set(cpp)
    for key, c in cpp.items():
        s = py[key]
        got = {"count": s.count, "zero": s.zero, "saturated": s.saturated, "sum": s.sum, "sum_sq": s.sum_sq,
               "sum_abs": s.sum_abs, "min": s.min, "max": s.max}
        want = {k: c[k] for k in got}
        assert got == want, key


def test_stats_equal_a_double_precision_reference():
    x = torch.tensor([[1.0, -2.0, 0.0], [float("nan"), 60.0, float("inf")]])
    s = gradscope.stats(x)
    finite = torch.tensor([1.0, -2.0, 0.0, 60.0], dtype=torch.float64)
    assert (s.count, s.finite, s.nan, s.pos_inf, s.neg_inf, s.zero, s.saturated) == (6, 4, 1, 1, 0, 1, 1)
    assert s.sum == finite.sum().item()
    assert s.sum_sq == finite.pow(2).sum().item()
    assert (s.min, s.max, s.max_abs) == (-2.0, 60.0, 60.0)
    assert abs(s.l2 - finite.norm().item()) < 1e-12
    t = torch.randn(1000, dtype=torch.float64).as_strided((250,), (4,))  # a strided view
    r = gradscope.stats(t)
    assert r.count == 250 and abs(r.sum - t.sum().item()) < 1e-9 and r.max == t.max().item()
