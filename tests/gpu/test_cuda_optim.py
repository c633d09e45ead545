"""An audit over a small model trained on the GPU, with gradscope.optim.Adam (whose fused pass
takes only float32 CPU parameters: CUDA ones take torch's own ops, python/gradscope/optim.py)
and with torch.optim.AdamW: every record (activations, gradients, parameters, updates) equals
the CPU run's within float32 rounding, the flags are the same, and the update records are the
change of the parameters that torch itself measures on the device."""
import pytest
import torch
from torch import nn

import gradscope
from compare import assert_records_close, assert_tree_close, records

STEPS = 8
# Two float32 runs of the same training on two devices: the products sum in another order, and
# 8 steps of Adam carry that on; 1e-3 is far above what this leaves (about 1e-6) and far below
# what a wrong statistic gives.
REL = 1e-3


def model(device):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 3)).to(device)


def batches():
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(16, 12, generator=g) * 2, torch.randn(16, 3, generator=g)) for _ in range(STEPS)]


OPTIMIZERS = {
    "gradscope.optim.Adam": lambda p: gradscope.optim.Adam(p, lr=1e-2, weight_decay=1e-4),
    "torch.optim.AdamW": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-2),
}


def train(device, optimizer):
    net = model(device)
    opt = OPTIMIZERS[optimizer](net.parameters())
    with gradscope.Audit(net) as audit:
        for x, y in batches():
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x.to(device)), y.to(device))
            loss.backward()
            audit.step(opt, loss=loss)
    return audit, [p.detach().cpu() for p in net.parameters()]


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_records_of_a_device_run_equal_the_cpu_runs(device, optimizer):
    got, got_params = train(device, optimizer)
    want, want_params = train(torch.device("cpu"), optimizer)
    for g, w in zip(got_params, want_params):  # the two trainings are the same training
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)
    got_records, want_records = records(got), records(want)
    sites = {site for _, _, site in want_records}
    assert {"activation", "output_grad", "param_grad", "param", "update"} <= sites, sites
    assert len(want_records) >= STEPS * 3 * 5
    assert_records_close(got_records, want_records, REL, f"{optimizer} on {device}", count_slack=1)
    assert got.report().flags() == want.report().flags()
    assert_tree_close(got.report().to_dict(), want.report().to_dict(), rel=REL, abs_=1e-9)


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_updates_are_the_parameters_change_measured_by_torch(device, optimizer):
    """The update records against the change of each parameter across the last step, taken here
    with plain torch on the device."""
    net = model(device)
    opt = OPTIMIZERS[optimizer](net.parameters())
    data = batches()
    with gradscope.Audit(net) as audit:
        for i, (x, y) in enumerate(data):
            before = [p.detach().clone() for p in net.parameters()]
            opt.zero_grad()
            nn.functional.mse_loss(net(x.to(device)), y.to(device)).backward()
            audit.step(opt)
    change = {}
    for (name, p), b in zip(net.named_parameters(), before):
        node = name.split(".")[0]
        d = (p.detach() - b).double()
        s = change.setdefault(node, [0, 0.0, 0.0])
        s[0] += d.numel()
        s[1] += float(d.abs().sum())
        s[2] = max(s[2], float(d.abs().max()))
    last = {node: r for (step, node, site), r in records(audit).items() if step == len(data) - 1 and site == "update"}
    assert last.keys() == change.keys()
    for node, (count, sum_abs, max_abs) in change.items():
        assert last[node]["count"] == count
        assert last[node]["sum_abs"] == pytest.approx(sum_abs, rel=1e-6)
        assert last[node]["max_abs"] == pytest.approx(max_abs, rel=1e-6)
