"""make bench-compile: what torch.compile costs and gains under an Audit (docs/python.md,
"torch.compile"), on two models, each stepped four ways:

  eager            the model as it is, no audit
  eager_audit      gradscope.Audit on it (every step; the GPT's attention every 10th)
  compiled         torch.compile(model) (inductor), no audit
  compiled_audit   Audit(model), then torch.compile(model)

The models: the demo's healthy digits MLP (tests/python/scenarios.py: 64-64-32-10 with ReLUs,
batch 64, Adam) and the transformer validation's GPT, healthy config (examples/transformer_lm.py:
2 pre-LN blocks, d 64, 4 heads, context 64, batch 16, AdamW; audited as
examples/transformer_audit.py does, its attention logits handed to audit.attention).

Each variant runs in a process of its own with an empty inductor cache (compiled code is shared
between instances of a class within a process, and a warm cache would hide the compile), one
thread. The first step (the compile, for the compiled variants: "cold compile") and the warm-up
after it are excluded; the per-step CPU time (time.process_time over the timed steps / steps) is
taken in each process, and its median over BENCH_REPEATS repeats (4), whose order of variants
rotates by one each repeat. Ratios are medians of the per-repeat ratios. The last line is one
JSON object."""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
VARIANTS = ("eager", "eager_audit", "compiled", "compiled_audit")
MODELS = ("mlp", "gpt")
REPEATS = int(os.environ.get("BENCH_REPEATS", "4"))
# (warm-up steps after the first, timed steps) per model
STEPS = {"mlp": (20, 400), "gpt": (10, 60)}


def keep_freed_memory():
    """As bench-python: glibc keeps freed memory, so that re-made temporaries do not fault their
    pages in again at every step (noise that lands on whichever variant allocates)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def mlp_stepper(audited):
    import torch
    from torch import nn
    import gradscope
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import scenarios

    data = os.environ.get("GRADSCOPE_DATA_DIR") or os.environ.get("GRADSCOPE_DEFAULT_DATA_DIR") or \
        os.path.join(ROOT, "data")
    x, y = scenarios.load_digits(os.path.join(data, "digits.csv"))
    torch.manual_seed(7)
    model = scenarios.healthy_mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    audit = gradscope.Audit(model) if audited else None
    batches = [(x[i:i + 64], y[i:i + 64]) for i in range(0, len(x) - 63, 64)]

    def step(call, i):
        xb, yb = batches[i % len(batches)]
        opt.zero_grad()
        nn.functional.cross_entropy(call(xb), yb).backward()
        audit.step(opt) if audit is not None else opt.step()
    return model, audit, step


def gpt_stepper(audited):
    import torch
    import gradscope
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import transformer_lm as lm
    from transformer_audit import audit_nodes

    cfg = lm.CONFIGS["healthy"]
    _, vocab = lm.load_text()
    batches = lm.fixed_batches(cfg)
    torch.manual_seed(0)
    model = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    audit = None
    if audited:
        audit = gradscope.Audit(model, nodes=audit_nodes(model))
        for block in model.blocks:
            block.attn.on_logits = lambda module, logits, mask: audit.attention(module, logits, mask)

    def step(call, i):
        xb, yb = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        call(xb, yb)[1].backward()
        audit.step(opt) if audit is not None else opt.step()
    return model, audit, step


def child(model_name, variant):
    """One variant in this process: prints one JSON line."""
    keep_freed_memory()
    import torch
    from torch._dynamo.utils import counters

    torch.set_num_threads(1)
    model, audit, step = (mlp_stepper if model_name == "mlp" else gpt_stepper)(variant.endswith("audit"))
    call = torch.compile(model) if variant.startswith("compiled") else model
    warm, timed = STEPS[model_name]
    start = time.perf_counter()
    step(call, 0)  # the compile, for a compiled variant
    first = time.perf_counter() - start
    for i in range(1, 1 + warm):
        step(call, i)
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(1 + warm, 1 + warm + timed):
        step(call, i)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    out = dict(model=model_name, variant=variant, step_cpu_ms=cpu / timed * 1e3, step_wall_ms=wall / timed * 1e3,
               first_step_s=first, graphs=counters["stats"]["unique_graphs"],
               graph_breaks=sum(counters["graph_break"].values()))
    if audit is not None:
        out["records"] = len(audit.records())
        audit.close()
    print(json.dumps(out))


def run_child(model_name, variant):
    with tempfile.TemporaryDirectory(prefix="gradscope_compile_bench_") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", model_name, variant],
                              env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"compile_bench: {model_name} {variant} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    import torch
    runs = {(m, v): [] for m in MODELS for v in VARIANTS}
    for r in range(REPEATS):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for m in MODELS:
            for v in order:
                runs[(m, v)].append(run_child(m, v))
    med = lambda m, v, key: statistics.median(x[key] for x in runs[(m, v)])  # noqa: E731

    def ratio(m, num, den):
        return statistics.median(a["step_cpu_ms"] / b["step_cpu_ms"] for a, b in zip(runs[(m, num)], runs[(m, den)]))

    print(f"torch {torch.__version__}, inductor on the CPU, one thread per process; {REPEATS} repeats, one "
          f"process per variant and repeat; load average {os.getloadavg()[0]:.2f}")
    result = {"bench": "compile", "torch": torch.__version__}
    for m in MODELS:
        print(f"{m}: {STEPS[m][1]} timed steps after {STEPS[m][0] + 1}")
        for v in VARIANTS:
            cpu = [x["step_cpu_ms"] for x in runs[(m, v)]]
            line = (f"  {v:15s} CPU per step {med(m, v, 'step_cpu_ms'):7.3f} ms "
                    f"(repeats {min(cpu):.3f}-{max(cpu):.3f}), wall {med(m, v, 'step_wall_ms'):7.3f} ms")
            if v.startswith("compiled"):
                line += (f"; first step (cold compile) {med(m, v, 'first_step_s'):5.1f} s, graphs "
                         f"{runs[(m, v)][0]['graphs']}, graph breaks {runs[(m, v)][0]['graph_breaks']}")
            print(line)
        r = dict(compiled_audit_vs_compiled=ratio(m, "compiled_audit", "compiled"),
                 compiled_audit_vs_eager_audit=ratio(m, "compiled_audit", "eager_audit"),
                 eager_audit_vs_eager=ratio(m, "eager_audit", "eager"),
                 compiled_vs_eager=ratio(m, "compiled", "eager"))
        print("  " + ", ".join(f"{k} {v:.3f}x" for k, v in r.items()))
        result.update({f"{m}_{k}": round(v, 4) for k, v in r.items()})
        result[f"{m}_cold_compile_s"] = round(med(m, "compiled", "first_step_s"), 1)
        result[f"{m}_cold_compile_audit_s"] = round(med(m, "compiled_audit", "first_step_s"), 1)
    print(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
