"""make bench-python: the Python audit's cost on bench-audit's MLP (64-4x1024-10, batch 256,
Adam), every step and every 10th step against no audit, and gradscope.optim.Adam alone and
audited every step, steps interleaved in one process; and
gradscope.stats against the same statistics in pure PyTorch (nine separate reductions).
The last line is one JSON object.

glibc is told to keep freed memory (mallopt, as bench-audit does): PyTorch frees and re-makes
multi-MB temporaries every step (Adam's, the activations), glibc returns them to the kernel and
the next allocation faults their pages in again; that put as much time in the kernel as in user
code and landed on whichever arm allocated next. Ratios are medians of per-cycle paired ratios
(each cycle steps every arm once, in alternating order), so drift across cycles cancels."""
import ctypes
import json
import os
import statistics
import sys
import time

import torch
from torch import nn

import gradscope

HIDDEN, LAYERS, BATCH, CLASSES = 1024, 4, 256, 10
CYCLES = int(os.environ.get("BENCH_CYCLES", "12"))
STEPS = int(os.environ.get("BENCH_STEPS", "10"))  # per side per cycle (a multiple of 10)


def make_mlp():
    torch.manual_seed(0)
    layers, width = [], 64
    for i in range(LAYERS):
        layers += [(f"fc{i}", nn.Linear(width, HIDDEN)), (f"relu{i}", nn.ReLU())]
        width = HIDDEN
    layers.append(("out", nn.Linear(width, CLASSES)))
    return nn.Sequential(__import__("collections").OrderedDict(layers))


class Arm:
    """One way of stepping the shared model: no audit, or an Audit sampling every k-th step."""

    def __init__(self, name, sample_every, optimizer=None):
        self.name = name
        self.sample_every = sample_every
        self.optimizer = optimizer  # its own (gradscope.optim.Adam), else the shared one
        self.times = []

    def steps(self, model, opt, x, y, n):
        opt = self.optimizer or opt
        # A fresh Audit per block, its first step untimed (hooks and snapshots set up there), so
        # every arm steps the same model and optimizer: with one model per arm, two unaudited
        # models differed by 11-19% on an idle machine (memory placement), more than the targets.
        audit = None if self.sample_every is None else gradscope.Audit(model, sample_every=self.sample_every)
        try:
            for timed in (False, True):
                start = time.perf_counter()
                for _ in range(n if timed else 1):
                    opt.zero_grad()
                    nn.functional.cross_entropy(model(x), y).backward()
                    if audit is None:
                        opt.step()
                    else:
                        audit.step(opt)
            self.times.append((time.perf_counter() - start) / n)
        finally:
            if audit is not None:
                audit.close()


def pure_torch_stats(t, eps=1e-7, sat=50.0):
    # What a user writes for the same summary: nine reductions, each a pass over the tensor.
    return (t.isnan().sum().item(), t.isinf().sum().item(), (t.abs() <= eps).sum().item(),
            (t.abs() > sat).sum().item(), t.sum().item(), t.pow(2).sum().item(), t.abs().sum().item(),
            t.min().item(), t.max().item())


def stats_speedup(tensors, repeats=20):
    best = {"gradscope": float("inf"), "torch": float("inf")}
    for _ in range(repeats):  # interleaved, best of each
        start = time.perf_counter()
        for t in tensors:
            gradscope.stats(t)
        best["gradscope"] = min(best["gradscope"], time.perf_counter() - start)
        start = time.perf_counter()
        for t in tensors:
            pure_torch_stats(t)
        best["torch"] = min(best["torch"], time.perf_counter() - start)
    return best["torch"] / best["gradscope"], best


def keep_freed_memory():
    libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def paired_median(num, den):
    return statistics.median(a / b for a, b in zip(num.times, den.times))


def main():
    keep_freed_memory()
    x, y = torch.randn(BATCH, 64), torch.randint(0, CLASSES, (BATCH,))
    # One model, one optimizer, stepped by every arm in turn. "control" steps it without audit
    # like "none": its ratio to "none" is the noise floor of the other ratios.
    model = make_mlp()
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    # The instrumented Adam (gradscope.optim, docs/optimizers.md) on the same model, with its own
    # moments: alone, and audited every step.
    fused = gradscope.optim.Adam(model.parameters(), 1e-4)
    arms = [Arm("none", None), Arm("every", 1), Arm("sample10", 10), Arm("control", None),
            Arm("fused", None, fused), Arm("fused_every", 1, fused)]
    for arm in arms:  # warm-up
        arm.steps(model, opt, x, y, 3)
        arm.times.clear()
    for cycle in range(CYCLES):
        order = arms if cycle % 2 == 0 else arms[::-1]
        for arm in order:
            arm.steps(model, opt, x, y, STEPS)
    med = {a.name: statistics.median(a.times) for a in arms}
    by_name = {a.name: a for a in arms}
    r1, r10 = paired_median(by_name["every"], by_name["none"]), paired_median(by_name["sample10"], by_name["none"])
    control = paired_median(by_name["control"], by_name["none"])
    r_fused = paired_median(by_name["fused"], by_name["none"])
    r_fused_every = paired_median(by_name["fused_every"], by_name["none"])
    h = x
    acts = []
    with torch.no_grad():
        for m in model:
            h = m(h)
            acts.append(h)
    tensors = [p.detach() for p in model.parameters()] + acts
    speedup, best = stats_speedup(tensors)
    print(f"MLP 64-{LAYERS}x{HIDDEN}-{CLASSES}, batch {BATCH}, Adam; {CYCLES} cycles of {STEPS} steps per side, "
          f"interleaved; torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")
    for a in arms:
        print(f"  {a.name:9s} median step {med[a.name] * 1e3:8.3f} ms")
    print(f"  control (no audit, same model): {control:.3f}x: the noise floor of these ratios")
    print(f"  audit every step: {r1:.3f}x (target <= 1.10); every 10th: {r10:.3f}x (target <= 1.02)")
    print(f"  gradscope.optim.Adam alone: {r_fused:.3f}x; audited every step with it: {r_fused_every:.3f}x "
          f"(target <= 1.05)")
    n = sum(t.numel() for t in tensors)
    print(f"  statistics of {len(tensors)} tensors ({n} elements): gradscope.stats {best['gradscope'] * 1e3:.3f} ms, "
          f"nine PyTorch reductions {best['torch'] * 1e3:.3f} ms: {speedup:.1f}x (target >= 5)")
    print(json.dumps({"bench": "python", "ratio_every_step": round(r1, 4), "ratio_sample10": round(r10, 4),
                      "ratio_instrumented_adam": round(r_fused, 4),
                      "ratio_every_step_instrumented": round(r_fused_every, 4),
                      "speedup_vs_pure_torch": round(speedup, 2),
                      "control": round(control, 4)}))


if __name__ == "__main__":
    sys.exit(main())
