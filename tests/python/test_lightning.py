"""gradscope.integrations.lightning with the real `lightning` package: the validation's GPT
(examples/transformer_lm.py) trained by Lightning's Trainer with GradscopeCallback gives the
findings the plain loop gives (examples/transformer_audit.py) on the same weights, batches and
schedule; the norm before clipping is the one the plain loop computes; accumulation, validation
passes, the run under trainer.log_dir, evaluation-only trainers and a missing package."""
import math
import os
import subprocess
import sys

import pytest
import torch

import gradscope
import integration_checks

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import transformer_audit  # noqa: E402  (the plain loop, audited)
import transformer_lm as lm  # noqa: E402

import lightning.pytorch as pl  # noqa: E402
from gradscope.integrations.lightning import GradscopeCallback, audit_of  # noqa: E402


def loader(batches):
    """The batches as they are, in order (batch_size=None: no collation)."""
    return torch.utils.data.DataLoader(batches, batch_size=None, shuffle=False)


def batches_of(cfg, seed, steps):
    """The (x, y) batches lm.train draws for `seed`, in its order (the same generator draws)."""
    return lm.fixed_batches(cfg, count=steps, seed=seed)


class GptModule(pl.LightningModule):
    """lm.train's model, optimizer and schedule as a LightningModule; its attention logits go to
    the audit through audit_of(self.trainer), as transformer_audit hands them over."""

    def __init__(self, cfg, seed):
        super().__init__()
        _, vocab = lm.load_text()
        torch.manual_seed(seed)
        self.cfg = cfg
        self.gpt = lm.TinyGPT(vocab, cfg["d"], cfg["n_head"], cfg["n_layer"], cfg["T"], cfg["qk_norm"], cfg["post_ln"],
                              cfg["init_std"], cfg.get("sdpa", False))
        self.val_losses = []
        for block in self.gpt.blocks:
            block.attn.on_logits = self._on_logits

    def _on_logits(self, module, logits, mask):
        audit = audit_of(self.trainer)
        if audit is not None:
            audit.attention(module, logits, mask)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.gpt(x, y)[1]

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_losses.append(float(self.gpt(x, y)[1]))

    def configure_optimizers(self):
        cfg = self.cfg
        opt = torch.optim.AdamW(self.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
        warm = cfg["warmup"]
        schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def trainer(tmp_path, callback, **kw):
    options = dict(accelerator="cpu", devices=1, logger=pl.loggers.CSVLogger(str(tmp_path)), max_epochs=1,
                   enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False,
                   num_sanity_val_steps=0)
    options.update(kw)
    return pl.Trainer(callbacks=[callback], **options)


def lightning_run(name, seed, tmp_path, **kw):
    cfg = dict(lm.CONFIGS[name])
    module = GptModule(cfg, seed)
    nodes = ["gpt." + n for n in transformer_audit.audit_nodes(module.gpt)]
    callback = GradscopeCallback(nodes=nodes)
    t = trainer(tmp_path, callback, gradient_clip_val=cfg["clip"], **kw)
    t.fit(module, train_dataloaders=loader(batches_of(cfg, seed, cfg["steps"])))
    return callback, t


def flags_and_onsets(report, prefix=""):
    """{node: (flags, first step of each flag)} with `prefix` taken off the node names."""
    out = {}
    for node in report.nodes:
        first = sorted((e.flag, e.first_step) for e in node.evidence)
        out[node.node[len(prefix):]] = (sorted(node.flags), first)
    return out


@pytest.mark.parametrize("name", ["unstable", "healthy"])
def test_the_trainer_gives_the_plain_loops_findings(name, tmp_path):
    seed = 0
    truth, plain = transformer_audit.audited(name, seed)  # sets one thread, as below
    callback, t = lightning_run(name, seed, tmp_path)
    report = callback.report
    assert report.steps == lm.CONFIGS[name]["steps"] == plain.steps
    assert flags_and_onsets(report, "gpt.") == flags_and_onsets(plain)
    assert report.verdict().replace("gpt.", "") == plain.verdict()
    if name == "unstable":
        assert not report.healthy() and "ATTENTION_LOGIT_GROWTH" in report.flags()["gpt.blocks.0.attn"]
    else:
        assert report.healthy(), report.verdict()
    # The norm before clipping: the plain loop's own, each step (Lightning clips after the hook).
    s = report.series
    assert s.grad_norm_steps == len(truth["global_grad_norm"])
    assert s.grad_norm_max == pytest.approx(max(truth["global_grad_norm"]), rel=1e-5)
    assert s.grad_norm_median == pytest.approx(sorted(truth["global_grad_norm"])[99], rel=1e-5)
    if lm.CONFIGS[name]["clip"] is not None:
        assert s.clip_known_steps == s.grad_norm_steps
        assert s.clipped_steps == sum(1 for n in truth["global_grad_norm"] if n > lm.CONFIGS[name]["clip"] * (1 + 1e-6))
    else:
        assert s.clip_known_steps == 0
    assert s.loss_steps == len(truth["loss"]) and s.last_loss == pytest.approx(truth["loss"][-1], rel=1e-6)
    # The run, where Lightning's logger writes.
    assert callback.run_dir == os.path.join(t.log_dir, "gradscope")
    saved = gradscope.load_run(callback.run_dir)
    assert saved.report.verdict() == report.verdict()


def test_accumulation_validation_and_the_loss_of_a_step(tmp_path):
    """Two micro-batches a step: one audited step per optimizer step, its loss the mean of the
    two; validation every 4 batches is not training."""
    cfg = dict(lm.CONFIGS["healthy"], steps=12)
    module = GptModule(cfg, 1)
    callback = GradscopeCallback(run=None, print_report=False,
                                 nodes=["gpt." + n for n in transformer_audit.audit_nodes(module.gpt)])
    batches = batches_of(cfg, 1, 12)
    losses = []

    class Record(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            losses.append(float(outputs["loss"]) * 2)  # Lightning divides by accumulate_grad_batches

    t = trainer(tmp_path, callback, accumulate_grad_batches=2, val_check_interval=4, limit_val_batches=2)
    t.callbacks.append(Record())
    t.fit(module, train_dataloaders=loader(batches), val_dataloaders=loader(batches[:2]))
    report = callback.report
    assert t.global_step == 6 and report.steps == 6
    assert len(module.val_losses) == 3 * 2  # three validations of two batches, none recorded
    s = report.series
    assert s.loss_steps == 6
    assert s.first_loss == pytest.approx((losses[0] + losses[1]) / 2, rel=1e-6)
    assert s.last_loss == pytest.approx((losses[10] + losses[11]) / 2, rel=1e-6)
    assert callback.run_dir is None and callback.audit is None  # closed at the end of training


def test_evaluation_only_and_a_fit_without_a_step_say_so(tmp_path, capsys):
    cfg = dict(lm.CONFIGS["healthy"])
    module = GptModule(cfg, 2)
    callback = GradscopeCallback(nodes=["gpt." + n for n in transformer_audit.audit_nodes(module.gpt)])
    t = trainer(tmp_path, callback)
    t.validate(module, dataloaders=loader(batches_of(cfg, 2, 2)))
    assert callback.report is None and callback.audit is None
    t = trainer(tmp_path, callback, max_steps=0)
    t.fit(module, train_dataloaders=loader(batches_of(cfg, 2, 2)))
    assert callback.report is not None and callback.report.steps == 0
    assert "no optimizer step ran in this fit, so nothing was judged" in capsys.readouterr().out


def test_bad_options_are_refused_with_their_names():
    integration_checks.refuses_decided_options(GradscopeCallback)


def test_without_lightning_import_gradscope_works_and_the_integration_names_its_extra():
    integration_checks.names_its_extra_when_the_package_is_missing('lightning', 'lightning')



def test_ddp_on_the_cpu_merges_both_ranks_and_rank_0_writes(tmp_path):
    """strategy="ddp", 2 processes over Gloo: one audited step per optimizer step on each rank,
    the activations of both ranks' batches counted (8 rows x 16 features each), the planted dead
    ReLU named on both ranks, and one run, written by rank 0."""
    import json
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, os.path.join(HERE, "lightning_ddp_script.py"), str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = []
    for rank in (0, 1):
        with open(tmp_path / f"rank{rank}.json") as f:
            lines.append(json.load(f))
    assert [line["rank"] for line in lines] == [0, 1]
    for line in lines:
        assert line["world"] == 2 and line["steps"] == line["global_step"] == 5
        assert "DEAD" in line["flags"]["net/0"], line  # the default node "net", its scope net/0
    assert lines[0]["verdict"] == lines[1]["verdict"]
    rank0 = next(line for line in lines if line["rank"] == 0)
    assert rank0["activation_counts"] == [2 * 8 * 16] * 5
    assert os.path.isdir(tmp_path / "run")


def test_the_findings_reach_the_trainers_tensorboard_logger(tmp_path):
    """With Lightning's TensorBoardLogger: gradscope/unhealthy and gradscope/flagged_nodes as
    scalars at the last step, and the report as text, read back by TensorBoard's own loader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    cfg = dict(lm.CONFIGS["unstable"], steps=40)
    module = GptModule(cfg, 0)
    callback = GradscopeCallback(print_report=False, nodes=["gpt." + n for n in transformer_audit.audit_nodes(module.gpt)])
    t = trainer(tmp_path, callback, logger=pl.loggers.TensorBoardLogger(str(tmp_path)))
    t.fit(module, train_dataloaders=loader(batches_of(cfg, 0, 40)))
    acc = EventAccumulator(t.logger.log_dir, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    flagged = sum(1 for flags in callback.report.flags().values() if flags != ["HEALTHY"])
    assert [(s.step, s.value) for s in acc.Scalars("gradscope/unhealthy")] == [(40, float(not callback.report.healthy()))]
    assert [(s.step, s.value) for s in acc.Scalars("gradscope/flagged_nodes")] == [(40, float(flagged))]
    text = acc.Tensors("gradscope/report/text_summary")
    assert len(text) == 1 and callback.report.verdict().encode() in text[0].tensor_proto.string_val[0]
    assert callback.run_dir == os.path.join(t.log_dir, "gradscope") and os.path.isdir(callback.run_dir)
