"""AuditOptions fields exposed with Python names: keep_steps, on_step, and the channel view's
own records (channel_records, similarity_records)."""
import pytest
import torch
from torch import nn

import gradscope


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 12), nn.ReLU(), nn.Linear(12, 1))


def train(audit, net, steps, batch=32):
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    for _ in range(steps):
        opt.zero_grad()
        net(torch.randn(batch, 8)).sum().backward()
        audit.step(opt)


def test_keep_steps_keeps_the_last_steps_and_report_covers_all():
    net = mlp()
    with gradscope.Audit(net, keep_steps=2) as audit:
        train(audit, net, 5)
        assert {r.step for r in audit.records()} == {3, 4}
    assert audit.report().nodes[0].steps == 5
    with gradscope.Audit(net, keep_steps=0) as audit:  # 0 keeps every step
        train(audit, net, 5)
        assert {r.step for r in audit.records()} == {0, 1, 2, 3, 4}
    with pytest.raises(gradscope.Error, match="keep_steps must be >= 0"):
        gradscope.Audit(net, keep_steps=-1)


def test_on_step_gets_every_audited_steps_records():
    net = mlp()
    seen = []
    with gradscope.Audit(net, sample_every=2, keep_records=False,
                         on_step=lambda records: seen.append(sorted({(r.step, r.node) for r in records}))) as audit:
        train(audit, net, 4)
        assert audit.records() == []
    assert seen == [[(0, "0"), (0, "2")], [(2, "0"), (2, "2")]]
    with pytest.raises(gradscope.Error, match="on_step must be callable, got int"):
        gradscope.Audit(net, on_step=3)


def test_channel_and_similarity_records_of_a_channel_view():
    # The C++ ChannelView test's case: 4 of 12 channels never fire after the ReLU.
    net = mlp()
    with torch.no_grad():
        net[0].bias[:4] = -100.0
    view = gradscope.ChannelView(dim=1, every=1, groups=[(4, 8), (8, 12)])
    with gradscope.Audit(net, channels={"0": view}) as audit:
        train(audit, net, 3)
    r = audit.report()
    assert r.nodes[0].label == "DEAD_CHANNELS(4)"
    assert r.nodes[0].channels == 12
    channels = audit.channel_records()  # still readable after the with-block
    assert [c.step for c in channels] == [0, 1, 2]
    assert [c.node for c in channels] == ["0"] * 3
    assert len(channels[0].activation) == 12 and len(channels[0].output_grad) == 12
    assert [s.zero for s in channels[0].activation[:4]] == [32] * 4  # the dead ones
    assert all(s.zero < 32 for s in channels[0].activation[4:])
    assert 1.0 < channels[0].effective_rank <= 8.0
    sims = audit.similarity_records()
    assert [(s.step, s.node, s.other) for s in sims] == [(i, "0", "0[4:8] vs 0[8:12]") for i in range(3)]
    assert all(0.0 <= s.cka <= 1.0 for s in sims)
