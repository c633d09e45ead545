"""The GPU check's step benchmark (scripts/gpu-check.sh; docs/devices.md, "The GPU check"): the
cost of the audit on a GPT that keeps the GPU busy, against the same steps without it.

The model is examples/transformer_lm.py's TinyGPT at GPT-2 small's width and depth (d 768, 12
heads, 12 blocks, context 512, a 256-token vocabulary of random ids), written the nanoGPT way
(scaled_dot_product_attention), trained with torch.optim.AdamW under bf16 autocast. The batch
starts at 8 and doubles until an unaudited step takes at least 20 ms. Arms, stepped in
interleaved cycles on one model and optimizer (bench/interleaved.py), each cycle between
torch.cuda.synchronize() calls:

  plain      no audit
  every      gradscope.Audit on every block's attention and MLP and the head, every step
  every10    the same, every 10th step (sample_every=10)
  control    no audit again: its ratio to plain is the noise floor

The attention statistics from q and k are timed apart, for one block at the bench's shape
(attention_block_ms): they copy the logits to the host in blocks of queries
(src/torch/audit/attention_query_key.cpp), gigabytes a measured step at this shape, which the
step arms could not afford inside the check's time. Ratios are medians of per-cycle paired
ratios. The last line is one JSON object; without CUDA its figures are null (--standin runs a
tiny GPT on the CPU instead, which checks this script, not a GPU)."""
import argparse
import json
import os
import statistics
import sys
import time

import torch

import gradscope

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)
from interleaved import Arm, paired_median, run_interleaved  # noqa: E402
from transformer_lm import TinyGPT  # noqa: E402  (the validation's model, not a copy of it)

MIN_STEP_MS = 20.0
GPT = dict(vocab=256, d=768, n_head=12, n_layer=12, T=512)
STANDIN_GPT = dict(vocab=64, d=64, n_head=4, n_layer=2, T=64)
CYCLES = int(os.environ.get("BENCH_CYCLES", "8"))
STEPS = int(os.environ.get("BENCH_STEPS", "20"))  # per arm per cycle (a multiple of 10)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Trainer:
    """One model, optimizer and set of batches that every arm steps."""

    def __init__(self, cfg, batch, device):
        self.cfg, self.batch, self.device = cfg, batch, device
        torch.manual_seed(0)
        self.model = TinyGPT(cfg["vocab"], cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], sdpa=True).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        g = torch.Generator().manual_seed(1)
        self.batches = [(torch.randint(0, cfg["vocab"], (batch, cfg["T"]), generator=g).to(device),
                         torch.randint(0, cfg["vocab"], (batch, cfg["T"]), generator=g).to(device))
                        for _ in range(10)]

    def step(self, audit, i):
        x, y = self.batches[i % len(self.batches)]
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            _, loss = self.model(x, y)
        loss.backward()
        if audit is None:
            self.opt.step()
        else:
            audit.step(self.opt)

    def plain_ms(self, n=5):
        for i in range(2):
            self.step(None, i)
        sync(self.device)
        start = time.perf_counter()
        for i in range(n):
            self.step(None, i)
        sync(self.device)
        return (time.perf_counter() - start) / n * 1e3

    def nodes(self):
        k = len(self.model.blocks)
        return [f"blocks.{i}.attn" for i in range(k)] + [f"blocks.{i}.mlp" for i in range(k)] + ["head"]


class GpuArm(Arm):
    """An arm whose cycles are timed between synchronisations of the device."""

    def __init__(self, name, sample_every, trainer):
        super().__init__(name)
        self.sample_every, self.trainer = sample_every, trainer  # sample_every None: no audit

    def open(self):
        if self.sample_every is None:
            return None
        # attention_every=0: the attention statistics are timed apart (attention_block_ms).
        return gradscope.Audit(self.trainer.model, nodes=self.trainer.nodes(), sample_every=self.sample_every,
                               attention_every=0)

    def step(self, audit, i):
        self.trainer.step(audit, i)

    def cycle(self, n):
        ctx = self.open()
        try:
            self.step(ctx, 0)  # untimed: hooks and snapshots are set up at the first step
            sync(self.trainer.device)
            start = time.perf_counter()
            for i in range(n):
                self.step(ctx, i)
            sync(self.trainer.device)
            self.times.append((time.perf_counter() - start) / n)
        finally:
            self.close(ctx)


def calibrate(cfg, device, standin):
    """The smallest batch (8, 16, ...) whose unaudited step takes MIN_STEP_MS, and that step's ms."""
    batch = 8
    trainer = Trainer(cfg, batch, device)
    ms = trainer.plain_ms()
    while not standin and ms < MIN_STEP_MS * 1.2 and batch < 512:
        try:
            bigger = Trainer(cfg, batch * 2, device)
            bigger_ms = bigger.plain_ms()
        except torch.cuda.OutOfMemoryError:
            break
        trainer, batch, ms = bigger, batch * 2, bigger_ms
        print(f"  batch {batch}: plain step {ms:.1f} ms", flush=True)
    return trainer


def attention_block_ms(trainer, repeats=3):
    """One block's attention statistics from its q and k at the bench's shape, as audit.attention
    measures them at a measured step: the median of `repeats` timed calls."""
    model, cfg = trainer.model, trainer.cfg
    captured = {}
    block = model.blocks[0].attn
    block.on_qk = lambda m, q, k: captured.update(q=q.detach(), k=k.detach())
    with torch.no_grad(), torch.autocast(trainer.device.type, dtype=torch.bfloat16,
                                         enabled=trainer.device.type == "cuda"):
        model(trainer.batches[0][0])
    block.on_qk = None
    times = []
    with gradscope.Audit(model, nodes=["blocks.0.attn"], attention_every=1) as audit:
        for _ in range(repeats):
            sync(trainer.device)
            start = time.perf_counter()
            audit.attention(block, q=captured["q"], k=captured["k"], is_causal=True)
            sync(trainer.device)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), tuple(captured["q"].shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--standin", action="store_true", help="a tiny GPT on the CPU: checks the script only")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    out = {"bench": "gpu", "cuda": cuda, "device": torch.cuda.get_device_name(0) if cuda else None,
           "torch": torch.__version__, "gpt": None, "plain_step_ms": None, "busy_enough": None,
           "every_step_vs_plain": None, "every10_vs_plain": None, "control_vs_plain": None,
           "attention_block_ms": None}
    if not cuda and not args.standin:
        print("gpu_bench: not run: CUDA absent")
        print(json.dumps(out))
        return 0
    device = torch.device("cuda" if cuda and not args.standin else "cpu")
    if args.standin:
        torch.set_num_threads(1)  # as the CPU benchmarks here run
    cfg = STANDIN_GPT if args.standin else GPT
    cycles, steps = (2, 10) if args.standin else (CYCLES, STEPS)
    trainer = calibrate(cfg, device, args.standin)
    params = sum(p.numel() for p in trainer.model.parameters())
    arms = [GpuArm("plain", None, trainer), GpuArm("every", 1, trainer), GpuArm("every10", 10, trainer),
            GpuArm("control", None, trainer)]
    by = run_interleaved(arms, cycles, steps)
    med = {a.name: statistics.median(a.times) * 1e3 for a in arms}
    attention_ms, qk_shape = attention_block_ms(trainer)
    print(f"TinyGPT d {cfg['d']}, {cfg['n_head']} heads, {cfg['n_layer']} blocks, context {cfg['T']}, batch "
          f"{trainer.batch}, {params / 1e6:.1f}M parameters, sdpa, "
          f"{'bf16 autocast' if device.type == 'cuda' else 'float32'}, AdamW; {cycles} cycles of {steps} steps per "
          f"arm, interleaved; torch {torch.__version__} on {out['device'] or 'the CPU (stand-in)'}")
    for a in arms:
        print(f"  {a.name:8s} median step {med[a.name]:9.3f} ms")
    ratio = {name: paired_median(by[name], by["plain"]) for name in ("every", "every10", "control")}
    print(f"  audit every step: {ratio['every']:.3f}x plain; every 10th: {ratio['every10']:.3f}x; "
          f"control: {ratio['control']:.3f}x (the noise floor)")
    print(f"  attention statistics of one block from q and k {list(qk_shape)}: {attention_ms:.1f} ms a measured step")
    out.update(gpt=dict(cfg, batch=trainer.batch, parameters=params), plain_step_ms=round(med["plain"], 3),
               busy_enough=med["plain"] >= MIN_STEP_MS, every_step_vs_plain=round(ratio["every"], 4),
               every10_vs_plain=round(ratio["every10"], 4), control_vs_plain=round(ratio["control"], 4),
               attention_block_ms=round(attention_ms, 3), cycles=cycles, steps=steps)
    if args.standin:
        out.update(cuda=False, standin=True, busy_enough=None)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
