"""transformer_lm's "unstable" GPT (seed 0) audited as examples/transformer_audit.py does: the
attention logits handed to audit.attention, record_loss and after_step. Its block 0 grows its
logits past the limit at step 20. Shared by test_compile.py (compiled and eager) and
fsdp_scenarios.py (sharded with FSDP2 and not)."""
import os
import sys

import torch

import gradscope

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import transformer_lm as lm  # noqa: E402
from transformer_audit import audit_nodes  # noqa: E402

GPT_STEPS = 45


def run_gpt(compiled=False, prepare=None, rows=None, job_loss=None, **audit_options):
    """Trains and audits it for GPT_STEPS; returns the Audit (closed). `prepare(model)` runs
    before the Audit is made (fully_shard, say); `rows(batch)` takes this process's rows of each
    batch; `job_loss(loss)` is the loss recorded (a job's mean across ranks)."""
    cfg = lm.CONFIGS["unstable"]
    data, vocab = lm.load_text()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], cfg["qk_norm"], cfg["post_ln"],
                       cfg["init_std"])
    if prepare is not None:
        prepare(model)
    audit = gradscope.Audit(model, nodes=audit_nodes(model), **audit_options)
    for block in model.blocks:
        block.attn.on_logits = lambda module, logits, mask: audit.attention(module, logits, mask)
    call = torch.compile(model) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    T, B = cfg["T"], cfg["batch"]
    rows = rows or (lambda batch: batch)
    with audit:
        for _ in range(GPT_STEPS):
            starts = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
            x = torch.stack([data[s:s + T] for s in starts])
            y = torch.stack([data[s + 1:s + T + 1] for s in starts])
            _, loss = call(rows(x), rows(y))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            audit.record_loss((job_loss(loss.detach()) if job_loss else loss).item())
            audit.after_step()
    return audit
