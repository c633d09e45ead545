"""make bench-loss: the cost of the loss series (docs/spikes.md) on the LSTM of the spike
validation (examples/lstm_lm.py: embedding, 2-layer LSTM 128, decoder over 1,645 words; batch 20
x bptt 35; SGD lr 20 with the recipe's clip 0.25), steps interleaved in one process on one model
and optimizer. Every arm reads loss.item() once a step, as a training loop that logs its loss
does, so what is measured is gradscope's own work:

  none      no audit: torch's clip_grad_norm_, optimizer.step()
  audit     the audit on encoder, rnn and decoder: torch's clip_grad_norm_, audit.step(opt)
  series    the same with the series: audit.clip_grad_norm_(0.25) (records the norm before and
            after clipping), audit.step(opt, loss=value, batch=i)
  control   no audit again: its ratio to none is the noise floor

Ratios are medians of per-cycle paired ratios (each cycle steps every arm once, in alternating
order). The series' cost is series / audit (target <= 1.01). The last line is one JSON object."""
import json
import os
import statistics
import sys

import torch
from torch import nn

import gradscope

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import lstm_lm as lm  # noqa: E402  (the validation's model, not a copy of it)
from interleaved import Arm, paired_median, run_interleaved  # noqa: E402

CYCLES = int(os.environ.get("BENCH_CYCLES", "12"))
STEPS = int(os.environ.get("BENCH_STEPS", "10"))  # per arm per cycle


class LstmArm(Arm):
    def __init__(self, name, audited, model, opt, batches, series=False):
        super().__init__(name)
        self.audited, self.series = audited, series
        self.model, self.opt, self.batches = model, opt, batches

    def open(self):
        return gradscope.Audit(self.model, nodes=list(lm.NODES)) if self.audited else None

    def step(self, audit, i):
        model, opt = self.model, self.opt
        x, y = self.batches[i % len(self.batches)]
        opt.zero_grad(set_to_none=True)
        logits, _ = model(x, model.init_hidden(x.size(1)))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        value = loss.item()  # the loop's own logging
        if audit is None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            opt.step()
        elif not self.series:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            audit.step(opt)
        else:
            audit.clip_grad_norm_(0.25)
            audit.step(opt, loss=value, batch=i)


def main():
    torch.set_num_threads(1)
    cfg = lm.CONFIGS["clipped"]
    data, vocab = lm.load_corpus()
    source = lm.batchify(data, cfg["batch"])
    bptt = cfg["bptt"]
    batches = [(source[b * bptt:(b + 1) * bptt], source[b * bptt + 1:(b + 1) * bptt + 1]) for b in range(10)]
    torch.manual_seed(0)
    model = lm.LSTMLM(vocab, cfg["emb"], cfg["hidden"], cfg["layers"], cfg["dropout"], cfg["init_range"])
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    arms = [LstmArm("none", False, model, opt, batches), LstmArm("audit", True, model, opt, batches),
            LstmArm("series", True, model, opt, batches, series=True), LstmArm("control", False, model, opt, batches)]
    by = run_interleaved(arms, CYCLES, STEPS)
    series_vs_audit = paired_median(by["series"], by["audit"])
    audit_vs_none = paired_median(by["audit"], by["none"])
    control = paired_median(by["control"], by["none"])
    print(f"LSTM LM 2 x {cfg['hidden']}, vocabulary {vocab}, batch {cfg['batch']} x bptt {bptt}, SGD, clip 0.25; "
          f"{CYCLES} cycles of {STEPS} steps per arm, interleaved; torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for a in arms:
        print(f"  {a.name:8s} median step {statistics.median(a.times) * 1e3:8.3f} ms")
    print(f"  control (no audit, same model): {control:.3f}x: the noise floor of these ratios")
    print(f"  the audit: {audit_vs_none:.3f}x the unaudited step")
    print(f"  the loss series (loss, batch, norms before and after clipping): {series_vs_audit:.3f}x the audited "
          f"step without it (target <= 1.01)")
    print(json.dumps({"bench": "loss", "series_vs_audit": round(series_vs_audit, 4),
                      "audit_vs_none": round(audit_vs_none, 4), "control": round(control, 4)}))


if __name__ == "__main__":
    sys.exit(main())
