"""audit.attention(node, q=q, k=k, ...) for models that call scaled_dot_product_attention: the
report's numbers against logits computed here in plain PyTorch, the same findings as the logits
call, grouped-query attention, a module inside a node recorded on that node, sampling that reads
nothing at unmeasured steps, evaluation passes, and bad input refused before anything is kept."""
import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import gradscope

HEADS, T, DIM = 4, 8, 16


class SdpaAttention(nn.Module):
    """Causal self-attention the nanoGPT way; `grow(step)` scales the queries of head `bad`."""

    def __init__(self, k_heads=HEADS, grow=None, bad=1):
        super().__init__()
        self.k_heads, self.grow, self.bad = k_heads, grow, bad
        self.q = nn.Linear(DIM, HEADS * 4)
        self.kv = nn.Linear(DIM, 2 * k_heads * 4)
        self.out = nn.Linear(HEADS * 4, DIM)
        self.step, self.audit, self.mask = 0, None, None
        self.seen = []  # (step, q, k) of every training forward, for the truth

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, HEADS, 4).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.k_heads, 4).permute(2, 0, 3, 1, 4)
        if self.grow is not None:
            scale = torch.ones(1, HEADS, 1, 1)
            scale[0, self.bad] = self.grow(self.step)
            q = q * scale
        if self.training:
            self.seen.append((self.step, q.detach().clone(), k.detach().clone()))
        causal = self.mask is None
        self.audit.attention(self, q=q, k=k, mask=self.mask, is_causal=causal)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, is_causal=causal,
                                           enable_gqa=self.k_heads != HEADS)
        return self.out(y.transpose(1, 2).reshape(b, t, HEADS * 4))


class Model(nn.Module):
    """The attention inside a block node: the call names the attention module, which is not a
    node itself, and is recorded on the block that holds it."""

    def __init__(self, **kw):
        super().__init__()
        torch.manual_seed(0)
        self.block = nn.Sequential()
        self.block.attn = SdpaAttention(**kw)
        self.head = nn.Linear(DIM, 1)

    def forward(self, x):
        return self.head(self.block(x))


def train(model, steps=12, x=None, **options):
    x = torch.randn(3, T, DIM, generator=torch.Generator().manual_seed(1)) if x is None else x
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with gradscope.Audit(model, nodes=["block", "head"], **options) as audit:
        model.block.attn.audit = audit
        for step in range(steps):
            model.block.attn.step = step
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            audit.step(opt)
    return audit.report()


def truth(q, k, mask=None):
    """Per q head: the largest visible logit, from logits written out here (causal when no mask)."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    logits = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    visible = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril() if mask is None else mask
    logits = logits.masked_fill(~visible, -math.inf)
    return logits.amax(dim=(0, 2, 3))


def evidence(report, flag, node="block"):
    return [e for e in report.node(node).evidence if e.flag == flag]


@pytest.mark.parametrize("k_heads", [HEADS, 2, 1])  # multi-head, grouped-query, multi-query
def test_growth_is_named_on_the_head_with_the_largest_logit_of_plain_pytorch(k_heads):
    start = 4
    model = Model(k_heads=k_heads, grow=lambda s: 1.0 if s < start else 400.0 * (s + 1))
    report = train(model, attention_every=1)
    growth = evidence(report, "ATTENTION_LOGIT_GROWTH")
    assert len(growth) == 1, report.table()
    largest = [(s, truth(q, k)) for s, q, k in model.block.attn.seen]
    first_big = min(s for s, mx in largest if mx.max() > 100)
    assert first_big == start
    assert growth[0].first_step == first_big
    assert growth[0].detail == f"head 1 of {HEADS}"
    assert growth[0].value == pytest.approx(max(mx.max().item() for _, mx in largest), rel=1e-5)
    assert not evidence(report, "ATTENTION_LOGIT_GROWTH", node="head")


def test_q_and_k_give_the_findings_the_logits_give():
    """The same q and k handed over as logits (computed here) and as q and k: one report."""

    class Twin(SdpaAttention):
        def __init__(self, as_logits, **kw):
            super().__init__(**kw)
            self.as_logits = as_logits

        def forward(self, x):
            if not self.as_logits:
                return super().forward(x)
            b, t, _ = x.shape
            q = self.q(x).view(b, t, HEADS, 4).transpose(1, 2)
            k, v = self.kv(x).view(b, t, 2, HEADS, 4).permute(2, 0, 3, 1, 4)
            scale = torch.ones(1, HEADS, 1, 1)
            scale[0, self.bad] = self.grow(self.step)
            q = q * scale
            logits = q @ k.transpose(-2, -1) / math.sqrt(4)
            self.audit.attention(self, logits, mask=torch.ones(t, t, dtype=torch.bool).tril())
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(y.transpose(1, 2).reshape(b, t, HEADS * 4))

    reports = []
    for as_logits in (False, True):
        model = Model(grow=lambda s: 1.0 + 60.0 * s)
        model.block.attn = Twin(as_logits, grow=lambda s: 1.0 + 60.0 * s)
        torch.manual_seed(0)
        model.block.attn.load_state_dict(Model().block.attn.state_dict())
        reports.append(train(model, steps=15, attention_every=2))
    ours, theirs = reports
    assert ours.flags() == theirs.flags()
    found = {(e.flag, e.first_step, e.detail) for e in ours.node("block").evidence}
    assert found == {(e.flag, e.first_step, e.detail) for e in theirs.node("block").evidence}
    assert any(f == "ATTENTION_LOGIT_GROWTH" for f, _, _ in found), ours.table()
    for a, b in zip(ours.node("block").evidence, theirs.node("block").evidence):
        assert a.value == pytest.approx(b.value, rel=1e-5)


def test_a_mask_as_scaled_dot_product_attention_takes_it():
    model = Model(grow=lambda s: 1.0 if s < 3 else 500.0)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    mask[:, 0] = False  # no query sees key 0
    mask[0, 0] = True   # but the first, which would see none
    model.block.attn.mask = mask
    report = train(model, attention_every=1)
    growth = evidence(report, "ATTENTION_LOGIT_GROWTH")
    assert len(growth) == 1
    assert growth[0].value == pytest.approx(max(truth(q, k, mask).max().item() for _, q, k in model.block.attn.seen), rel=1e-5)


def test_a_healthy_run_is_quiet():
    report = train(Model(), attention_every=1)
    assert report.flagged() == [], report.table()


def test_unmeasured_steps_read_nothing():
    """q and k on the meta device have shapes and no data: every step that does not measure
    attention accepts them; a measured one cannot compute from them."""
    model = nn.Linear(DIM, DIM)
    meta = torch.empty(1, HEADS, T, 4, device="meta")
    with gradscope.Audit(model, attention_every=5) as audit:
        for step in range(10):
            model(torch.randn(2, DIM)).sum().backward()
            if step % 5 == 0:
                with pytest.raises(Exception):
                    audit.attention(model, q=meta, k=meta, is_causal=True)
            else:
                assert audit.attention(model, q=meta, k=meta, is_causal=True) is None
            audit.step(lambda: None)


def test_evaluation_passes_are_not_recorded():
    model = Model(grow=lambda s: 1.0)
    x = torch.randn(3, T, DIM)
    big = torch.randn(3, HEADS, T, 4) * 1000
    with gradscope.Audit(model, nodes=["block", "head"], attention_every=1) as audit:
        model.block.attn.audit = audit
        for step in range(6):
            model(x).pow(2).mean().backward()
            model.eval()
            audit.attention(model.block.attn, q=big, k=big, is_causal=True)  # eval: not recorded
            model.train()
            with torch.no_grad():
                audit.attention(model.block.attn, q=big, k=big, is_causal=True)  # no_grad: not recorded
            audit.step(lambda: None)
    assert not evidence(audit.report(), "ATTENTION_LOGIT_GROWTH")


def test_bad_input_is_refused_naming_the_node_and_the_tensor(tmp_path):
    model = Model()
    good = torch.randn(2, HEADS, T, 4)
    cases = [
        (dict(q=good), "q and k must both be given"),
        (dict(q=good, k=[1, 2]), "k must be a tensor, got list"),
        (dict(q=good, k=torch.randn(2, 3, T, 4)), "expected k [2, heads dividing 4, keys, 4]"),
        (dict(q=good, k=good.double()), "q is Float and k is Double"),
        (dict(q=good, k=good, mask=torch.ones(3, T, dtype=torch.bool)), "mask of shape [3, 8] does not broadcast"),
        (dict(q=good, k=good, mask=torch.ones(T, T, dtype=torch.bool), is_causal=True), "not both"),
        (dict(q=good, k=good, is_causal=1), "is_causal must be True or False"),
        (dict(q=good, k=good, scale="x"), "scale must be a number"),
        (dict(q=good, k=good, scale=float("nan")), "scale must be finite"),
        (dict(logits=good, q=good, k=good), "not both"),
        (dict(logits=good, is_causal=True), "is_causal and scale go with q and k"),
    ]
    run = tmp_path / "run"
    with gradscope.Audit(model, nodes=["block", "head"], run=run, attention_every=1) as audit:
        model.block.attn.audit = audit
        for kwargs, message in cases:
            logits = kwargs.pop("logits", None)
            with pytest.raises(gradscope.Error) as e:
                audit.attention(model.block.attn, logits, **kwargs)
            assert message in str(e.value), (message, str(e.value))
        with pytest.raises(gradscope.Error, match="not inside an audited node"):
            audit.attention(nn.Linear(2, 2), q=good, k=good)
        model(torch.randn(2, T, DIM)).sum().backward()
        audit.step(lambda: None)
    # Nothing was kept of the refused calls: the run reads, with no attention finding.
    saved = gradscope.load_run(run)
    assert saved.report.flagged() == []
