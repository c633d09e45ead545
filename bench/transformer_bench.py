"""make bench-transformer: the cost of the attention statistics (docs/attention.md) on the
character-level GPT of the transformer validation (examples/transformer_lm.py: 2 pre-LN
blocks, d 64, 4 heads, context 64, batch 16, AdamW), steps interleaved in one process on one
model and optimizer, twice: the attention written out (its logits handed to audit.attention),
and the same GPT through scaled_dot_product_attention (its q and k handed over; arms sdpa_*):

  none       no audit (the custom attention's on_logits unset)
  audit      the audit on every block's attention and MLP and the head, attention off
             (attention_every=0: audit.attention returns at once)
  every      the same, attention measured every step
  sample10   the same, every 10th step (the default)
  control    no audit again: its ratio to none is the noise floor

The sdpa_ arms are the same five on the SDPA model. Ratios are medians of per-cycle paired ratios (each cycle steps every arm once, in alternating
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
            if block.attn.sdpa:  # q and k, the logits computed at measured steps only
                block.attn.on_logits = None
                block.attn.on_qk = None if audit is None else (
                    lambda m, q, k: audit.attention(m, q=q, k=k, is_causal=True))
            else:
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


def ratios(by, prefix=""):
    """The ratios of one model's five arms (`prefix` names them)."""
    arm = lambda name: by[prefix + name]
    inc = lambda e: statistics.median((x - a) / n for x, a, n in zip(arm(e).times, arm("audit").times,
                                                                       arm("none").times))
    return dict(every_vs_audit=paired_median(arm("every"), arm("audit")),
                sample10_vs_audit=paired_median(arm("sample10"), arm("audit")),
                every_vs_none=paired_median(arm("every"), arm("none")),
                sample10_vs_none=paired_median(arm("sample10"), arm("none")),
                audit_vs_none=paired_median(arm("audit"), arm("none")),
                control=paired_median(arm("control"), arm("none")),
                increment_every=inc("every"), increment_10=inc("sample10"))


def show(title, r):
    print(f"  {title}:")
    print(f"    control (no audit, same model): {r['control']:.3f}x: the noise floor of these ratios")
    print(f"    the audit without attention: {r['audit_vs_none']:.3f}x the unaudited step")
    print(f"    attention every step: {r['every_vs_audit']:.3f}x the audited step without it, {r['every_vs_none']:.3f}x "
          f"the unaudited step; its increment {r['increment_every']:+.3f} of the unaudited step (target <= +0.05)")
    print(f"    attention every 10th: {r['sample10_vs_audit']:.3f}x the audited step without it, "
          f"{r['sample10_vs_none']:.3f}x the unaudited step; its increment {r['increment_10']:+.3f} (target <= +0.01)")


def main():
    cfg = lm.CONFIGS["healthy"]
    _, vocab = lm.load_text()
    T, B = cfg["T"], cfg["batch"]
    batches = lm.fixed_batches(cfg)
    arms = []
    for prefix, sdpa in (("", False), ("sdpa_", True)):
        torch.manual_seed(0)
        model = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], sdpa=sdpa)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        arms += [GptArm(prefix + name, every, model, opt, batches)
                 for name, every in (("none", None), ("audit", 0), ("every", 1), ("sample10", 10), ("control", None))]
    by = run_interleaved(arms, CYCLES, STEPS)
    med = {a.name: statistics.median(a.times) for a in arms}
    logits, sdpa = ratios(by), ratios(by, "sdpa_")
    print(f"TinyGPT {cfg['n_layer']} blocks, d {cfg['d']}, {cfg['n_head']} heads, context {T}, batch {B}, AdamW; "
          f"{CYCLES} cycles of {STEPS} steps per arm, interleaved; torch {torch.__version__}, threads "
          f"{torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")
    for a in arms:
        print(f"  {a.name:15s} median step {med[a.name] * 1e3:8.3f} ms")
    show("attention written out, its logits handed over", logits)
    show("scaled_dot_product_attention, q and k handed over", sdpa)
    out = {"bench": "transformer", "torch": torch.__version__}
    for prefix, r in (("", logits), ("sdpa_", sdpa)):
        out.update({prefix + "attention_every_step_vs_audit": round(r["every_vs_audit"], 4),
                    prefix + "attention_every10_vs_audit": round(r["sample10_vs_audit"], 4),
                    prefix + "attention_increment_every_step": round(r["increment_every"], 4),
                    prefix + "attention_increment_every10": round(r["increment_10"], 4),
                    prefix + "audit_without_attention_vs_none": round(r["audit_vs_none"], 4),
                    prefix + "every_step_vs_none": round(r["every_vs_none"], 4),
                    prefix + "every10_vs_none": round(r["sample10_vs_none"], 4),
                    prefix + "control": round(r["control"], 4)})
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
