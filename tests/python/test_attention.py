"""Attention statistics through audit.attention(): the report's numbers against plain PyTorch
(softmax written here), planted logit growth and collapse on one head, a healthy control,
sampling, evaluation passes and bad input."""
import math

import pytest
import torch
from torch import nn

import gradscope

HEADS, T = 4, 6


class Planted(nn.Module):
    """A layer whose attention logits the test plants: head `bad` is scaled by `scale(step)`."""

    def __init__(self, scale, bad=2, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.attn = nn.Linear(8, 8)
        self.scale, self.bad = scale, bad
        self.logits = []  # what the test fed the audit, per step, for the truth
        self.audit = None

    def forward(self, x, step):
        y = self.attn(x)
        g = torch.Generator().manual_seed(100 + step)
        logits = torch.randn(2, HEADS, T, T, generator=g)
        logits[:, self.bad] *= self.scale(step) * (1.0 if self.training else 500.0)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        self.logits.append((step, logits.clone(), mask))
        self.audit.attention("attn", logits, mask=mask)
        return y


def run(scale, steps=20, **options):
    model = Planted(scale)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 8)
    with gradscope.Audit(model, nodes=["attn"], **options) as audit:
        model.audit = audit
        for step in range(steps):
            opt.zero_grad()
            model(x, step).pow(2).mean().backward()
            audit.step(opt)
    return model, audit.report()


def truth(logits, mask, head):
    """Largest visible logit and mean entropy / log(keys seen) over queries seeing >= 2 keys."""
    l = logits[:, head].double().masked_fill(~mask, -math.inf)
    p = torch.softmax(l, dim=-1)
    ent = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)  # [batch, queries]
    seen = mask.sum(-1).double()
    frac = (ent[:, seen >= 2] / torch.log(seen[seen >= 2])).mean().item()
    return l[torch.isfinite(l)].max().item(), frac


def evidence(report, flag):
    found = [e for e in report.node("attn").evidence if e.flag == flag]
    assert len(found) == 1, [str(e) for e in report.node("attn").evidence]
    return found[0]


def test_growth_and_collapse_are_named_on_the_head_with_the_numbers_of_plain_pytorch():
    start = 5
    model, report = run(lambda s: 1.0 if s < start else 60.0 * s, attention_every=1)
    flags = report.flags()["attn"]
    assert "ATTENTION_LOGIT_GROWTH" in flags and "ATTENTION_ENTROPY_COLLAPSE" in flags, flags
    per_step = [(step, *truth(l, m, 2)) for step, l, m in model.logits]
    # The truth, computed here: the step the planted head first crossed each threshold.
    first_big = min(s for s, mx, _ in per_step if mx > 100)
    first_flat = min(s for s, _, fr in per_step if fr < 0.1)
    assert first_big == start and first_flat == start
    growth = evidence(report, "ATTENTION_LOGIT_GROWTH")
    assert growth.first_step == first_big
    assert growth.detail == "head 2 of 4"
    assert growth.site == "attention_logits"
    assert growth.value == pytest.approx(max(mx for _, mx, _ in per_step), rel=1e-6)
    collapse = evidence(report, "ATTENTION_ENTROPY_COLLAPSE")
    assert collapse.first_step == first_flat
    assert collapse.detail == "head 2 of 4"
    assert collapse.value == pytest.approx(min(fr for _, _, fr in per_step), rel=1e-6, abs=1e-9)
    assert "ATTENTION_LOGIT_GROWTH since step 5" in report.table()


def test_a_healthy_head_set_is_quiet():
    _, report = run(lambda s: 1.0, attention_every=1)
    assert report.flags()["attn"] == ["HEALTHY"]


def test_sampled_every_nth_audited_step():
    # Growth from step 7; sampled at 0, 5, 10, ...: seen from step 10, three samples by 20.
    _, report = run(lambda s: 1.0 if s < 7 else 80.0 * s, steps=25, attention_every=5)
    assert evidence(report, "ATTENTION_LOGIT_GROWTH").first_step == 10
    # Off: nothing is judged.
    _, off = run(lambda s: 1.0 if s < 7 else 80.0 * s, steps=25, attention_every=0)
    assert "ATTENTION_LOGIT_GROWTH" not in off.flags()["attn"]


def test_evaluation_passes_are_not_recorded():
    # The planted model scales head 2 by 500 in eval mode: recorded, it would read as growth.
    model = Planted(lambda s: 1.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 8)
    with gradscope.Audit(model, nodes=["attn"], attention_every=1) as audit:
        model.audit = audit
        for step in range(8):
            opt.zero_grad()
            model(x, step).pow(2).mean().backward()
            audit.step(opt)
            model.eval()
            with torch.no_grad():
                model(x, step)
            model.train()
    assert audit.report().flags()["attn"] == ["HEALTHY"]
    assert max(truth(l, m, 2)[0] for _, l, m in model.logits) > 100  # the eval passes were large


def test_bad_input_names_the_node():
    model = Planted(lambda s: 1.0)
    with gradscope.Audit(model, nodes=["attn"], attention_every=1) as audit:
        with pytest.raises(gradscope.Error, match="attention of node 'attn'.*dimensions"):
            audit.attention("attn", torch.zeros(4, 4))
        with pytest.raises(gradscope.Error, match="attention of node 'attn': mask of shape"):
            audit.attention("attn", torch.zeros(2, 4, 6, 6), mask=torch.ones(5, 5, dtype=torch.bool))
        with pytest.raises(gradscope.Error, match="attention of node 'attn': logits must be floating point"):
            audit.attention("attn", torch.zeros(2, 4, 6, 6, dtype=torch.long))
        with pytest.raises(gradscope.Error, match="attention"):
            audit.attention("nope", torch.zeros(2, 4, 6, 6))
        with pytest.raises(gradscope.Error, match="not inside an audited node"):
            audit.attention(nn.Linear(2, 2), torch.zeros(2, 4, 6, 6))
    with pytest.raises(gradscope.Error, match="attention_every must be an integer >= 0"):
        gradscope.Audit(Planted(lambda s: 1.0), nodes=["attn"], attention_every=-1)


class MhaModel(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True)
        self.out = nn.Linear(16, 1)

    def forward(self, x, mask, padding):
        y, _ = self.mha(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False)
        return self.out(y)


def mha_truth(mha, x, mask, padding):
    """Per head: largest visible logit (q and k written out) and the mean entropy fraction of
    the weights nn.MultiheadAttention itself returns."""
    with torch.no_grad():
        _, w = mha(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=True, average_attn_weights=False)
        e = mha.embed_dim
        q = x @ mha.in_proj_weight[:e].T + mha.in_proj_bias[:e]
        k = x @ mha.in_proj_weight[e:2 * e].T + mha.in_proj_bias[e:2 * e]
        b, t, _ = x.shape
        q, k = q.view(b, t, 4, 4).transpose(1, 2), k.view(b, t, 4, 4).transpose(1, 2)
        logits = (q @ k.transpose(-2, -1)) / 2.0
        visible = ~mask.view(1, 1, t, t) & ~padding.view(b, 1, 1, t)
        logits = logits.masked_fill(~visible, -math.inf)
        w = w.double()
        ent = -(w * torch.log(w.clamp_min(1e-300))).sum(-1)
        seen = visible.sum(-1).double()
        frac = torch.where(seen >= 2, ent / torch.log(seen.clamp_min(2)), torch.zeros_like(ent))
        frac = frac.sum((0, 2)) / (seen >= 2).sum((0, 2))
        return logits.amax((0, 2, 3)).tolist(), frac.tolist()


def test_multihead_attention_is_measured_from_its_own_weights_with_its_masks():
    model = MhaModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(3, 7, 16)
    mask = torch.ones(7, 7, dtype=torch.bool).triu(1)  # nn.MultiheadAttention: True = hidden
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[1, 5:] = True
    truths = []
    with gradscope.Audit(model, nodes=["mha", "out"], attention_every=1) as audit:
        for step in range(12):
            if step == 4:
                with torch.no_grad():
                    model.mha.in_proj_weight[:16] *= 60.0  # the queries: every logit x60
            truths.append(mha_truth(model.mha, x, mask, padding))  # a no-grad pass: not recorded
            opt.zero_grad()
            model(x, mask, padding).pow(2).mean().backward()
            audit.step(opt)
    report = audit.report()
    first_big = min(s for s, (mx, _) in enumerate(truths) if max(mx) > 100)
    assert first_big == 4
    growth = [e for e in report.node("mha").evidence if e.flag == "ATTENTION_LOGIT_GROWTH"]
    assert len(growth) == 1, report.table()
    assert growth[0].first_step == first_big
    assert growth[0].value == pytest.approx(max(max(mx) for mx, _ in truths), rel=1e-4)
    worst = int(growth[0].measure.split("head ")[1].split(" ")[0])
    assert max(truths[int(growth[0].measure.split("(step ")[1].split(";")[0])][0]) == pytest.approx(growth[0].value, rel=1e-4)
    assert worst == max(range(4), key=lambda h: max(mx[h] for mx, _ in truths))
    collapse = [e for e in report.node("mha").evidence if e.flag == "ATTENTION_ENTROPY_COLLAPSE"]
    if collapse:  # the value is the lowest fraction of the head it names
        h = int(collapse[0].measure.split("head ")[1].split(" ")[0])
        assert collapse[0].value == pytest.approx(min(fr[h] for _, fr in truths), abs=1e-4)
    assert "ATTENTION_LOGIT_GROWTH" not in report.flags()["out"]
    # The module's own forward is back once the audit closes.
    assert "forward" not in model.mha.__dict__


@pytest.mark.parametrize("planted", [False, True])
def test_a_transformer_encoder_layer_reports_its_attention_on_its_node(planted):
    torch.manual_seed(4)
    model = nn.Sequential(nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True, dropout=0.0),
                          nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 9, 16)
    with gradscope.Audit(model, attention_every=1) as audit:
        for step in range(10):
            if planted and step == 3:
                with torch.no_grad():
                    model[0].self_attn.in_proj_weight[:16] *= 80.0
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            audit.step(opt)
    flags = audit.report().flags()
    assert ("ATTENTION_LOGIT_GROWTH" in flags["0"]) == planted, flags
    assert "ATTENTION_LOGIT_GROWTH" not in flags["1"]


def test_a_head_count_that_changes_is_refused_at_the_call_and_the_run_stays_readable(tmp_path, gradscope_cli):
    """4 heads, then 8 on the same node: once accepted, the run then refused by every reader
    ("attention has 8 heads at step 1, earlier 4"). The writer refuses it at the call; what was
    recorded reads back, in the process, through load_run and through the CLI."""
    import subprocess
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("attn", nn.Linear(8, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 8)
    run_dir = str(tmp_path / "run")
    with gradscope.Audit(model, nodes=["attn"], attention_every=1, run=run_dir) as audit:
        for step, heads in enumerate((4, 4, 8, 4, 4, 4, 4, 4)):
            model(x).pow(2).mean().backward()  # a training forward: this step is measured
            logits = torch.randn(2, heads, T, T, generator=torch.Generator().manual_seed(step))
            logits[:, 2] *= 1.0 if step < 4 else 60.0 * step  # head 2 of 4 grows: its flag names the count kept
            if heads == 8:
                with pytest.raises(gradscope.Error, match=r"attention of node 'attn': 8 heads at step 2, earlier 4 "
                                                          r"\(from step 0\); a node's head count is fixed"):
                    audit.attention("attn", logits)
                with pytest.raises(gradscope.Error, match="8 heads at step 2, earlier 4"):
                    audit.attention("attn", q=torch.randn(2, 8, T, 4), k=torch.randn(2, 8, T, 4))
            else:
                audit.attention("attn", logits)
            audit.step(opt)
            opt.zero_grad()
    for report in (audit.report(), gradscope.load_run(run_dir).report):
        assert report.steps == 8
        assert evidence(report, "ATTENTION_LOGIT_GROWTH").detail == "head 2 of 4"
    for command in (["report", run_dir], ["report", run_dir, "--json"], ["html", run_dir]):
        done = subprocess.run([gradscope_cli, *command], capture_output=True, text=True)
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "heads at step" not in done.stderr
