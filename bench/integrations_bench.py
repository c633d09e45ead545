"""make bench-integrations: what each integration's callback costs inside the trainer it serves
(docs/integrations.md, "Cost").

Trainer arms train examples/hf_trainer.py's Llama-style model (2 layers, d 64, grouped-query
attention, batch 16 x 64 tokens, AdamW, clipping at 1) for STEPS optimizer steps, one thread:

  plain               a plain PyTorch loop: forward, backward, clip, step
  hf / hf_gradscope   transformers.Trainer without / with GradscopeCallback (attention through
                      gradscope_sdpa, measured every 10th step: the default)
  pl / pl_gradscope   lightning.Trainer without / with its GradscopeCallback (the same model in
                      a LightningModule; gradient_clip_val=1)
  audit / audit_wandb the plain loop with gradscope.Audit (the same nodes), without / with
                      on_step=StepLogger(run) into an offline W&B run

Boosted-tree arms train a binary classifier on 5,000 x 30 synthetic rows (a noisy linear label,
seeded), 200 rounds of depth 4 (LightGBM: 15 leaves), validation on 1,000 more, two threads:
xgb / xgb_gradscope, lgb / lgb_gradscope, cat / cat_gradscope, without / with gradscope.trees'
callback given both row sets, timed over the whole training with the callback's end (reading the
model, judging every round, writing the run) included.

Each arm is timed from the start of its WARM-th step to the end of its last (set-up, the first
steps and the report at the end excluded: time.perf_counter in the trainers' own hooks). The arms
run REPEATS times, the order reversed every other repeat; a ratio is the median over repeats of
the paired ratio. The last line is one JSON object."""
import json
import os
import statistics
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import hf_trainer  # noqa: E402

import lightning.pytorch as pl  # noqa: E402
import numpy as np  # noqa: E402
import transformers  # noqa: E402
import wandb  # noqa: E402

import gradscope  # noqa: E402
import gradscope.trees  # noqa: E402
from gradscope.integrations import lightning as gl  # noqa: E402
from gradscope.integrations import transformers as gt  # noqa: E402
from gradscope.integrations.wandb import StepLogger  # noqa: E402

STEPS = int(os.environ.get("BENCH_STEPS", 120))
WARM = 20
REPEATS = int(os.environ.get("BENCH_REPEATS", 5))
SEED = 0


def batches():
    rows = hf_trainer.rows(STEPS, SEED)
    ids = torch.stack([r["input_ids"] for r in rows])
    return [ids[i * hf_trainer.BATCH:(i + 1) * hf_trainer.BATCH] for i in range(STEPS)]


def plain(out, audited=None):
    """The plain loop; `audited` None, "audit" or "wandb" (the audit logging to W&B offline)."""
    model = hf_trainer.build("llama", SEED)
    opt = hf_trainer.optimizer(model)
    audit = run = None
    if audited == "wandb":
        run = wandb.init(project="gradscope-bench", mode="offline", dir=out)
    if audited is not None:
        audit = gradscope.Audit(model, nodes=gt.default_nodes(model),
                                on_step=StepLogger(run) if run is not None else None)
    start = None
    for i, x in enumerate(batches()):
        if i == WARM:
            start = time.perf_counter()
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if audit is not None:
            audit.step(opt, loss=loss)
        else:
            opt.step()
    seconds = (time.perf_counter() - start) / (STEPS - WARM)
    if audit is not None:
        audit.close()
    if run is not None:
        run.finish()
    return seconds


class _HfClock(transformers.TrainerCallback):
    def __init__(self):
        self.start = self.end = None

    def on_step_begin(self, args, state, control, **kw):
        if state.global_step == WARM:
            self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.end = time.perf_counter()


def hf(out, audited):
    model = hf_trainer.build("llama", SEED)
    clock = _HfClock()
    callbacks = [clock] + ([gt.GradscopeCallback(run=None, print_report=False)] if audited else [])
    hf_trainer.trainer(model, out, callbacks, STEPS, SEED, logging_steps=10 ** 6).train()
    return (clock.end - clock.start) / (STEPS - WARM)


class _Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = hf_trainer.build("llama", SEED)

    def training_step(self, x, i):
        return self.model(input_ids=x, labels=x).loss

    def configure_optimizers(self):
        return hf_trainer.optimizer(self.model)


class _PlClock(pl.Callback):
    def __init__(self):
        self.start = self.end = None

    def on_train_batch_start(self, trainer, module, batch, i):
        if trainer.global_step == WARM:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, i):
        self.end = time.perf_counter()


def lightning(out, audited):
    clock = _PlClock()
    module = _Module()
    nodes = ["model." + n for n in gt.default_nodes(module.model)]  # the HF nodes, inside the LightningModule
    callbacks = [clock] + ([gl.GradscopeCallback(run=None, print_report=False, nodes=nodes)] if audited else [])
    trainer = pl.Trainer(callbacks=callbacks, max_steps=STEPS, gradient_clip_val=1.0, logger=False,
                         enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False,
                         accelerator="cpu", devices=1, default_root_dir=out)
    data = torch.utils.data.DataLoader(batches(), batch_size=None, shuffle=False)
    trainer.fit(module, data)
    return (clock.end - clock.start) / (STEPS - WARM)


def tree_rows():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((6000, 30))
    y = (x @ rng.standard_normal(30) + 2.0 * rng.standard_normal(6000) > 0).astype(np.float64)
    return x[:5000], y[:5000], x[5000:], y[5000:]


def trees(library, out, audited):
    import catboost
    import lightgbm
    import xgboost
    xt, yt, xv, yv = tree_rows()
    os.makedirs(out, exist_ok=True)
    make = {"xgb": gradscope.trees.xgboost_callback, "lgb": gradscope.trees.lightgbm_callback,
            "cat": gradscope.trees.catboost_callback}[library]
    cb = make(os.path.join(out, "run"), data=(xt, yt), valid=(xv, yv), print_report=False) if audited else None
    start = time.perf_counter()
    if library == "xgb":
        params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.1, "nthread": 2}
        xgboost.train(params, xgboost.DMatrix(xt, label=yt), 200, callbacks=[cb] if cb else None)
    elif library == "lgb":
        params = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "num_threads": 2, "verbose": -1}
        lightgbm.train(params, lightgbm.Dataset(xt, yt), 200, callbacks=[cb] if cb else None)
    else:
        model = catboost.CatBoostClassifier(iterations=200, depth=4, learning_rate=0.1, thread_count=2, verbose=False,
                                            random_seed=SEED, train_dir=os.path.join(out, "catboost_info"))
        model.fit(xt, yt, callbacks=[cb] if cb else None)
        if cb is not None:
            cb.finish(model)
    return time.perf_counter() - start


ARMS = {"plain": plain, "hf": lambda o: hf(o, False), "hf_gradscope": lambda o: hf(o, True),
        "pl": lambda o: lightning(o, False), "pl_gradscope": lambda o: lightning(o, True),
        "audit": lambda o: plain(o, "audit"), "audit_wandb": lambda o: plain(o, "wandb")}
TREE_ARMS = {f"{lib}{tag}": (lambda o, lib=lib, on=bool(tag): trees(lib, o, on))
             for lib in ("xgb", "lgb", "cat") for tag in ("", "_gradscope")}


def main():
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    import logging
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    os.environ.setdefault("WANDB_SILENT", "true")
    arms = dict(ARMS, **TREE_ARMS)
    times = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(REPEATS):
            order = list(arms) if r % 2 == 0 else list(arms)[::-1]
            for name in order:
                torch.set_num_threads(2 if name in TREE_ARMS else 1)
                times[name].append(arms[name](os.path.join(tmp, f"{name}-{r}")))
            print(f"repeat {r + 1}/{REPEATS}: " + ", ".join(
                f"{n} {times[n][-1] * 1e3:.2f} ms" + ("/step" if n in ARMS else "") for n in arms), flush=True)

    def ratio(a, b):
        return round(statistics.median(x / y for x, y in zip(times[a], times[b])), 4)

    import catboost
    import lightgbm
    import xgboost
    result = {"bench": "integrations", "torch": torch.__version__, "transformers": transformers.__version__,
              "lightning": pl.__version__, "wandb": wandb.__version__, "xgboost": xgboost.__version__,
              "lightgbm": lightgbm.__version__, "catboost": catboost.__version__, "steps": STEPS, "repeats": REPEATS,
              "plain_ms": round(statistics.median(times["plain"]) * 1e3, 3),
              "hf_gradscope_vs_hf": ratio("hf_gradscope", "hf"), "hf_vs_plain": ratio("hf", "plain"),
              "pl_gradscope_vs_pl": ratio("pl_gradscope", "pl"), "pl_vs_plain": ratio("pl", "plain"),
              "audit_vs_plain": ratio("audit", "plain"), "audit_wandb_vs_audit": ratio("audit_wandb", "audit"),
              "xgb_s": round(statistics.median(times["xgb"]), 3), "xgb_gradscope_vs_xgb": ratio("xgb_gradscope", "xgb"),
              "lgb_s": round(statistics.median(times["lgb"]), 3), "lgb_gradscope_vs_lgb": ratio("lgb_gradscope", "lgb"),
              "cat_s": round(statistics.median(times["cat"]), 3), "cat_gradscope_vs_cat": ratio("cat_gradscope", "cat")}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
