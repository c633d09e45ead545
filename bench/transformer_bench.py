"""make bench-transformer: the cost of the attention statistics (docs/attention.md) on the
character-level GPT of the transformer validation (examples/transformer_lm.py: 2 pre-LN
blocks, d 64, 4 heads, context 64, batch 16, AdamW), steps interleaved in one process on one
model and optimizer:

  none       no audit (the custom attention's on_logits unset)
  audit      the audit on every block's attention and MLP and the head, attention off
             (attention_every=0: audit.attention returns at once)
  every      the same, attention measured every step
  sample10   the same, every 10th step (the default)
  control    no audit again: its ratio to none is the noise floor

Ratios are medians of per-cycle paired ratios (each cycle steps every arm once, in alternating
order). The attention's own cost is every / audit and sample10 / audit; against the unaudited
step, its increment is (every - audit) / none. The last line is one JSON object."""
import json
import os
import statistics
import sys

import torch
from torch import nn

import gradscope

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import transformer_lm as lm  # noqa: E402  (the validation's model, not a copy of it)
from interleaved import Arm, paired_median, run_interleaved  # noqa: E402

CYCLES = int(os.environ.get("BENCH_CYCLES", "12"))
STEPS = int(os.environ.get("BENCH_STEPS", "20"))  # per arm per cycle (a multiple of 10)


class GptArm(Arm):
    def __init__(self, name, attention_every, model, opt, batches):
        super().__init__(name)
        self.attention_every = attention_every  # None: no audit
        self.model, self.opt, self.batches = model, opt, batches

    def open(self):
        model, audit = self.model, None
        if self.attention_every is not None:
            k = len(model.blocks)
            nodes = [f"blocks.{i}.attn" for i in range(k)] + [f"blocks.{i}.mlp" for i in range(k)] + ["head"]
            audit = gradscope.Audit(model, nodes=nodes, attention_every=self.attention_every)
        for block in model.blocks:
            block.attn.on_logits = None if audit is None else (lambda m, l, mask: audit.attention(m, l, mask))
        return audit

    def step(self, audit, i):
        x, y = self.batches[i % len(self.batches)]
        self.opt.zero_grad(set_to_none=True)
        self.model(x, y)[1].backward()
        if audit is None:
            self.opt.step()
        else:
            audit.step(self.opt)


def main():
    cfg = lm.CONFIGS["healthy"]
    data, vocab = lm.load_text()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    T, B = cfg["T"], cfg["batch"]
    batches = []
    for _ in range(10):
        s = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        batches.append((torch.stack([data[i:i + T] for i in s]), torch.stack([data[i + 1:i + T + 1] for i in s])))
    arms = [GptArm(name, every, model, opt, batches)
            for name, every in (("none", None), ("audit", 0), ("every", 1), ("sample10", 10), ("control", None))]
    by = run_interleaved(arms, CYCLES, STEPS)
    med = {a.name: statistics.median(a.times) for a in arms}
    every_vs_audit = paired_median(by["every"], by["audit"])
    sample10_vs_audit = paired_median(by["sample10"], by["audit"])
    every_vs_none = paired_median(by["every"], by["none"])
    sample10_vs_none = paired_median(by["sample10"], by["none"])
    audit_vs_none = paired_median(by["audit"], by["none"])
    control = paired_median(by["control"], by["none"])
    increment_every = statistics.median((e - a) / n for e, a, n in zip(by["every"].times, by["audit"].times, by["none"].times))
    increment_10 = statistics.median((e - a) / n for e, a, n in zip(by["sample10"].times, by["audit"].times, by["none"].times))
    print(f"TinyGPT {cfg['n_layer']} blocks, d {cfg['d']}, {cfg['n_head']} heads, context {T}, batch {B}, AdamW; "
          f"{CYCLES} cycles of {STEPS} steps per arm, interleaved; torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for a in arms:
        print(f"  {a.name:9s} median step {med[a.name] * 1e3:8.3f} ms")
    print(f"  control (no audit, same model): {control:.3f}x: the noise floor of these ratios")
    print(f"  the audit without attention: {audit_vs_none:.3f}x the unaudited step")
    print(f"  attention every step: {every_vs_audit:.3f}x the audited step without it, {every_vs_none:.3f}x the "
          f"unaudited step; its increment {increment_every:+.3f} of the unaudited step (target <= +0.05)")
    print(f"  attention every 10th: {sample10_vs_audit:.3f}x the audited step without it, {sample10_vs_none:.3f}x "
          f"the unaudited step; its increment {increment_10:+.3f} (target <= +0.01)")
    print(json.dumps({"bench": "transformer", "attention_every_step_vs_audit": round(every_vs_audit, 4),
                      "attention_every10_vs_audit": round(sample10_vs_audit, 4),
                      "attention_increment_every_step": round(increment_every, 4),
                      "attention_increment_every10": round(increment_10, 4),
                      "audit_without_attention_vs_none": round(audit_vs_none, 4),
                      "every_step_vs_none": round(every_vs_none, 4), "every10_vs_none": round(sample10_vs_none, 4),
                      "control": round(control, 4)}))


if __name__ == "__main__":
    sys.exit(main())
