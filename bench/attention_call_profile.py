"""One audit.attention call against the model's own attention, on one block's tensors of the
transformer validation's GPT (batch 16, 4 heads, context 64, head dim 16, causal): what the
ratios of `make bench-transformer` cannot resolve under their noise floor. Best of three trials
of 200 calls each, inside a training forward of the audited model (so every call is measured).

  PYTHONPATH=build/python .venv/bin/python bench/attention_call_profile.py
  OMP_NUM_THREADS=1 PYTHONPATH=build/python .venv/bin/python bench/attention_call_profile.py

The last line is one JSON object (milliseconds per call)."""
import json
import os
import sys
import time

import torch

import gradscope

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import transformer_lm as lm  # noqa: E402  (the validation's model, not a copy of it)

CALLS, TRIALS = 200, 3


def per_call_ms(call):
    best = float("inf")
    for _ in range(TRIALS):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        best = min(best, (time.perf_counter() - start) / CALLS * 1e3)
    return best


def main():
    torch.manual_seed(0)
    cfg = lm.CONFIGS["healthy"]
    _, vocab = lm.load_text()
    model = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], sdpa=True)
    audit = gradscope.Audit(model, nodes=["blocks.0.attn"], attention_every=1)
    node = model.blocks[0].attn
    B, H, T = cfg["batch"], cfg["n_head"], cfg["T"]
    D = cfg["d"] // H
    q, k, v = (torch.randn(B, H, T, D) for _ in range(3))
    logits = (q @ k.transpose(-1, -2)) / D ** 0.5
    hidden = ~torch.ones(T, T, dtype=torch.bool).tril()
    x, y = lm.fixed_batches(cfg)[0]
    model(x, y)  # a training forward: the audit measures every call until the step
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = {"bench": "attention_call", "torch": torch.__version__, "threads": torch.get_num_threads(),
           "sdpa_ms": per_call_ms(sdpa),
           "audit_qk_ms": per_call_ms(lambda: audit.attention(node, q=q, k=k, is_causal=True)),
           "audit_logits_ms": per_call_ms(lambda: audit.attention(node, logits, hidden)),
           "qk_matmul_ms": per_call_ms(lambda: q @ k.transpose(-1, -2))}
    for key in ("sdpa_ms", "audit_qk_ms", "audit_logits_ms", "qk_matmul_ms"):
        out[key] = round(out[key], 4)
    print(f"[{B}, {H}, {T}, {D}] q and k, causal; torch {torch.__version__}, {out['threads']} threads")
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
