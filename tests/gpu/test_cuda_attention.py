"""audit.attention(module, q=q, k=k, is_causal=True) with q and k on the GPU: the logits are made
there, in blocks of queries (src/torch/audit/attention_query_key.cpp), and the report holds what
the same q and k give on the CPU: the same flags and evidence (first step, head), the same
per-node numbers within float32 rounding, and the largest logit of plain PyTorch."""
import math

import pytest
import torch
from torch import nn

import gradscope
from compare import assert_tree_close

BATCH, HEADS, T, DIM = 2, 4, 16, 8
STEPS, BAD = 12, 1


class QueryKey(nn.Module):
    """An audited node whose forward hands the audit this step's q and k, given from outside, so
    that the CPU and the GPU runs see the very same numbers."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(DIM, DIM)
        self.audit, self.qk = None, None

    def forward(self, x):
        q, k = self.qk
        self.audit.attention(self, q=q, k=k, is_causal=True)
        return self.lin(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.attn = QueryKey()

    def forward(self, x):
        return self.attn(x)


def query_key(step, k_heads, dtype):
    """q and k of one step, on the CPU: head BAD's queries grow from step 4 on (logit growth),
    the others stay near 1."""
    g = torch.Generator().manual_seed(100 + step)
    q = torch.randn(BATCH, HEADS, T, DIM, generator=g)
    k = torch.randn(BATCH, k_heads, T, DIM, generator=g)
    if step >= 4:
        q[:, BAD] *= 60.0 * step
    return q.to(dtype), k.to(dtype)


def truth(q, k):
    """Per q head, the largest visible (causal) logit, from logits written out in float64."""
    group = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(group, dim=1)
    logits = (q.double() @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    visible = torch.ones(T, T, dtype=torch.bool).tril()
    return logits.masked_fill(~visible, -math.inf).amax(dim=(0, 2, 3))


def run(device, k_heads, dtype):
    model = Model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, T, DIM, generator=torch.Generator().manual_seed(1)).to(device)
    with gradscope.Audit(model, attention_every=1) as audit:
        model.attn.audit = audit
        for step in range(STEPS):
            q, k = query_key(step, k_heads, dtype)
            model.attn.qk = (q.to(device), k.to(device))
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            audit.step(opt)
    return audit.report()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("k_heads", [HEADS, 2, 1], ids=["mha", "gqa", "mqa"])
def test_q_and_k_on_the_device_report_what_they_report_on_the_cpu(device, k_heads, dtype):
    got, want = run(device, k_heads, dtype), run(torch.device("cpu"), k_heads, dtype)
    assert got.flags() == want.flags(), (got.table(), want.table())
    growth = [e for e in got.node("attn").evidence if e.flag == "ATTENTION_LOGIT_GROWTH"]
    assert len(growth) == 1, got.table()
    assert (growth[0].first_step, growth[0].detail) == (4, f"head {BAD} of {HEADS}")  # heads count from 0
    largest = max(float(truth(*query_key(s, k_heads, dtype)).max()) for s in range(STEPS))
    assert growth[0].value == pytest.approx(largest, rel=1e-5)
    # Everything else in the report: flags, evidence, per-node measures. The logits are float32
    # products made on each device; what is taken from them agrees to float32 rounding.
    assert_tree_close(got.to_dict(), want.to_dict(), rel=1e-4, abs_=1e-6)
