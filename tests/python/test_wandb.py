"""gradscope.integrations.wandb with the real wandb package (0.31.0), offline: nothing leaves the
machine. Each test trains, logs into a wandb.init(mode="offline") run and reads the run folder
back (the .wandb file through wandb's protobuf module, the table's media file): the per-step
scalars equal what torch computes for the same step, every audited step appears once whatever
the user's own logging does, and the findings table and the summary name the planted faults."""
import glob
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from torch import nn

import gradscope
import wandb
from gradscope.integrations._findings import FINDING_COLUMNS, LOSS_NODE
from gradscope.integrations.wandb import StepLogger, log_report, log_steps
from wandb_offline import OfflineRun, offline_env, run_folder

SOURCE = os.environ.get("GRADSCOPE_SOURCE_DIR", ".")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    with offline_env(tmp_path, monkeypatch):
        yield tmp_path


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))  # nodes "0" (with its ReLU), "2"


def train(model, audit, steps, sample_every=1, before=None, after=None, nan_at=None, spike_at=None):
    """SGD on a fixed batch, audit.step(opt, loss=...) each step; `before(step, loss)` and
    `after(step, loss)` are the user's own logging around it. At `nan_at` the batch is NaN, at
    `spike_at` the targets x100. Returns the losses and {audited step: {scalar: value}} as torch
    computes them: each node's gradient L2, its update's L2 over its values' before the step, and
    the shares of its output (the ReLU's, the head's) with |x| <= 1e-7 (dead_eps), with finite
    |x| > 50 (activation_saturation) and that are NaN or Inf."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 8)
    y = x.sum(1, keepdim=True)
    outputs = {}
    hooks = [model[i].register_forward_hook(lambda m, a, out, i=i: outputs.__setitem__(i, out.detach()))
             for i in (1, 2)]
    nodes = {"0": (model[0], 1), "2": (model[2], 2)}  # node: (its Linear, the module whose output it is)
    losses, truth = [], {}
    for step in range(steps):
        before_values = {n: _flat(m.parameters()) for n, (m, _) in nodes.items()}
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x * math.nan if step == nan_at else x), y * 100 if step == spike_at else y)
        loss.backward()
        grads = {n: _flat(p.grad for p in m.parameters()) for n, (m, _) in nodes.items()}
        losses.append(loss.item())
        if before:
            before(step, losses[-1])
        audit.step(opt, loss=loss)
        if after:
            after(step, losses[-1])
        if step % sample_every:
            continue
        truth[step] = {}
        for n, (m, out) in nodes.items():
            old, new = before_values[n], _flat(m.parameters())
            truth[step][f"grad_l2/{n}"] = float(grads[n].norm())
            truth[step][f"update_ratio/{n}"] = float((new - old).norm() / old.norm())
            a = outputs[out]
            truth[step][f"activation_zero_frac/{n}"] = float((a.abs() <= 1e-7).double().mean())
            truth[step][f"activation_saturated_frac/{n}"] = float((a.isfinite() & (a.abs() > 50)).double().mean())
            truth[step][f"activation_nonfinite_frac/{n}"] = float((~a.isfinite()).double().mean())
    for h in hooks:
        h.remove()
    return losses, truth


def _flat(tensors):
    return torch.cat([t.detach().flatten().double() for t in tensors])


def gradscope_rows(back, node="0"):
    """{audit step: history row} of the rows holding gradscope scalars; fails on a step logged twice."""
    rows = {}
    for row in back.history():
        if f"gradscope/grad_l2/{node}" in row:
            step = row["gradscope/step"]
            assert step not in rows, f"audit step {step} logged twice"
            rows[step] = row
    return rows


def assert_scalars_equal(rows, truth):
    assert sorted(rows) == sorted(truth)
    for step, want in truth.items():
        for key, value in want.items():
            got = rows[step]["gradscope/" + key]
            if math.isnan(value):
                assert math.isnan(got), (step, key, got)
            else:
                assert got == pytest.approx(value, rel=1e-5, abs=1e-12), (step, key)


@pytest.mark.parametrize("logging", ["step_before", "step_after", "every_3_after"])
def test_each_audited_step_lands_once_with_torchs_values_beside_the_users_rows(offline, logging):
    """The user logs with step= before or after audit.step, or without step= every third step
    after it: each audited step (0, 2, ..., 10) lands once with torch's values, NaN for the NaN
    batch at step 10, and W&B's increasing-step rule drops none of the user's values."""
    run = wandb.init(project="gradscope-test")
    fed = {}

    def log(step, loss):
        if logging.startswith("step_") or step % 3 == 0:
            run.log({"loss": loss}, **({"step": step} if logging.startswith("step_") else {}))
            fed[step] = loss

    model = mlp()
    with gradscope.Audit(model, sample_every=2, on_step=StepLogger(run)) as audit:
        hook = {"before": log} if logging == "step_before" else {"after": log}  # around audit.step
        _, truth = train(model, audit, 12, sample_every=2, nan_at=10, **hook)
    run.finish()
    back = OfflineRun(run_folder(run))
    rows = gradscope_rows(back)
    assert_scalars_equal(rows, truth)
    assert math.isnan(rows[10]["gradscope/grad_l2/2"]) and math.isnan(rows[10]["gradscope/update_ratio/2"])
    assert rows[10]["gradscope/activation_nonfinite_frac/0"] == 1.0
    history = back.history()
    assert [row["loss"] for row in history if "loss" in row] == pytest.approx(list(fed.values()), nan_ok=True)
    if logging == "step_before":  # the scalars join the row the user filled for their step
        assert all(row["_step"] == step for step, row in rows.items())
    steps = [row["_step"] for row in history]
    assert steps == sorted(set(steps))
    assert back.step_metrics() == {"gradscope/*": "gradscope/step"}


def test_a_saved_run_logged_after_training_lands_after_the_users_rows(offline):
    """log_steps and log_report of gradscope.load_run(records=True) into a run that already
    logged 7 rows: every step of the saved run after them, with torch's values."""
    model = mlp(1)
    with gradscope.Audit(model, run=str(offline / "gs-run")) as audit:
        _, truth = train(model, audit, 8)
    run = wandb.init(project="gradscope-test")
    for epoch in range(7):
        run.log({"epoch": epoch})
    with pytest.raises(gradscope.Error, match=r"load_run\(path, records=True\)"):
        log_steps(gradscope.load_run(str(offline / "gs-run")), run)
    saved = gradscope.load_run(str(offline / "gs-run"), records=True)
    assert log_steps(saved, run) == 8
    log_report(saved, run)
    run.finish()
    back = OfflineRun(run_folder(run))
    history = back.history()
    assert [row["epoch"] for row in history if "epoch" in row] == list(range(7))
    rows = gradscope_rows(back)
    assert_scalars_equal(rows, truth)
    assert min(row["_step"] for row in rows.values()) >= 7
    assert back.summary()["gradscope/verdict"] == saved.report.verdict().strip()


def test_the_charts_are_tensorboards_scalars_flags_included(offline):
    """One audit writing TensorBoard events and logging to W&B: every gradscope scalar of every
    step (the per-step flags among them: node 0's ReLU dead from step 0) is the value of the same
    tag in the event file, read by the tensorboard package."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    model = mlp(3)
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    run = wandb.init(project="gradscope-test")
    board = str(offline / "tb")
    with gradscope.Audit(model, on_step=StepLogger(run), tensorboard=board) as audit:
        train(model, audit, 12, after=lambda s, loss: run.log({"loss": loss}))
    run.finish()
    rows = gradscope_rows(OfflineRun(run_folder(run)))
    events = EventAccumulator(board, size_guidance={"scalars": 0})
    events.Reload()
    assert sorted(rows) == list(range(12))
    compared = 0
    for step, row in rows.items():
        for key, value in row.items():
            if not key.startswith("gradscope/") or key == "gradscope/step":
                continue
            tag = key[len("gradscope/"):]
            board_value = {e.step: e.value for e in events.Scalars(tag)}[step]  # float32 in the file
            assert value == pytest.approx(board_value, rel=1e-6, abs=1e-30) or \
                (math.isnan(value) and math.isnan(board_value)), (step, tag)
            compared += 1
    assert compared >= 12 * 8
    assert all(row["gradscope/flag/DEAD/0"] == 1.0 for row in rows.values())
    assert all(row["gradscope/flag/DEAD/2"] == 0.0 for row in rows.values())


def test_the_findings_table_and_summary_name_the_planted_faults(offline):
    """A dead ReLU (bias -100) and a batch with targets x100 at step 40: DEAD on node 0 with the
    share torch counts, DIVERGENCE at step 40 with the loss fed there against the highest before,
    and the summary is the report's verdict."""
    model = mlp(2)
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    run = wandb.init(project="gradscope-test")
    with gradscope.Audit(model) as audit:
        losses, truth = train(model, audit, 60, spike_at=40, before=lambda s, loss: run.log({"loss": loss}, step=s))
    report = audit.report()
    rows = log_report(report, run)
    run.log({"test_loss": 1.5}, step=59)  # the user's last step is still open: the table left it so
    run.finish()
    back = OfflineRun(run_folder(run))
    columns, data = back.table("gradscope/findings")
    assert columns == list(FINDING_COLUMNS)
    assert data == [[None if isinstance(v, float) and math.isnan(v) else v for v in row] for row in rows]
    found = {(row[0], row[1]): dict(zip(columns, row)) for row in data}
    flagged = {(node, flag) for node, flags in report.flags().items() for flag in flags if flag != "HEALTHY"}
    assert set(found) == flagged | {(LOSS_NODE, "DIVERGENCE")}
    dead = found[("0", "DEAD")]
    assert dead["since_step"] == 0 and dead["site"] == "activation"
    assert dead["value"] == max(t["activation_zero_frac/0"] for t in truth.values()) == 1.0
    assert dead["threshold"] == gradscope.Thresholds().dead_frac
    divergence = found[(LOSS_NODE, "DIVERGENCE")]
    assert divergence["since_step"] == 40
    assert divergence["value"] == pytest.approx(losses[40], rel=1e-7)
    assert divergence["threshold"] == pytest.approx(max(losses[:40]), rel=1e-7)
    assert found[("2", "GRADIENT_SPIKE")]["since_step"] == 40
    assert [row["test_loss"] for row in back.history() if "test_loss" in row] == [1.5]
    summary = back.summary()
    assert summary["gradscope/verdict"] == report.verdict().strip() and "DIVERGENCE at step 40" in summary["gradscope/verdict"]
    assert summary["gradscope/healthy"] is False
    assert summary["gradscope/steps"] == 60 and summary["gradscope/flagged_nodes"] == 2


def test_a_loss_spike_is_a_row_of_the_loss(offline):
    """docs/python.md's corrupted batch at step 40 (targets x100, gradients clipped, so the loss
    comes back): a LOSS_SPIKE row at step 40 with the loss fed there, and no DIVERGENCE."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 8)
    y = x.sum(1, keepdim=True)
    losses = []
    run = wandb.init(project="gradscope-test")
    with gradscope.Audit(model) as audit:
        for step in range(60):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y * 100 if step == 40 else y)
            loss.backward()
            losses.append(loss.item())
            audit.clip_grad_norm_(1.0)
            audit.step(opt, loss=loss, batch=step)
    log_report(audit.report(), run)
    run.finish()
    _, data = OfflineRun(run_folder(run)).table("gradscope/findings")
    loss_rows = [row for row in data if row[0] == LOSS_NODE]
    assert [(row[1], row[2]) for row in loss_rows] == [("LOSS_SPIKE", 40)]
    assert loss_rows[0][3] == pytest.approx(losses[40], rel=1e-7) and losses[40] > 100 * max(losses[:40])


def test_no_step_logs_an_empty_healthy_table_that_says_so(offline):
    run = wandb.init(project="gradscope-test")
    with gradscope.Audit(mlp(), on_step=StepLogger(run)) as audit:
        pass  # an evaluation-only job: no step
    assert log_report(audit.report(), run) == []
    assert log_steps(audit.records(), run) == 0
    run.finish()
    back = OfflineRun(run_folder(run))
    columns, data = back.table("gradscope/findings")
    assert columns == list(FINDING_COLUMNS) and data == []
    summary = back.summary()
    assert summary["gradscope/healthy"] is True and summary["gradscope/steps"] == 0
    assert "no step was audited, so nothing was judged" in summary["gradscope/verdict"]
    assert not gradscope_rows(back)


def test_what_is_not_a_run_or_a_report_is_refused_by_name(offline):
    with pytest.raises(gradscope.Error, match=r"StepLogger: no W&B run: call wandb.init\(\) first"):
        StepLogger()
    with pytest.raises(gradscope.Error, match="log_report: run must be a W&B run .* got object"):
        log_report(gradscope.Audit(mlp()).report(), object())
    run = wandb.init(project="gradscope-test")
    with pytest.raises(gradscope.Error, match="report must be a gradscope.Report or gradscope.Run, got str"):
        log_report("runs/x")
    run.finish()


@pytest.mark.parametrize("wandb_module, message", [
    ("None", "refused: gradscope.integrations.wandb needs the 'wandb' package (supported: wandb 0.17 to 0.31"),
    ("'0.16.6'", "refused: gradscope.integrations.wandb needs wandb 0.17 or newer (supported: wandb 0.17 to 0.31; "
                 "tested with 0.31.0); this environment has 0.16.6"),
    ("'0.40.0'", "warned: gradscope.integrations.wandb: wandb 0.40.0 is newer than the versions tested (supported: "
                 "wandb 0.17 to 0.31; tested with 0.31.0)"),
])
def test_without_wandb_or_with_an_untested_one_import_gradscope_works_and_the_integration_says_why(wandb_module,
                                                                                                   message):
    """No wandb, or one too old: ImportError naming the range and the extra, when the integration
    is imported, never at import gradscope. One newer than tested: a warning naming the range."""
    fake = "None" if wandb_module == "None" else f"type(sys)('wandb'); sys.modules['wandb'].__version__ = {wandb_module}"
    code = (f"import sys, warnings; sys.modules['wandb'] = {fake}\n"
            "import gradscope\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    try:\n"
            "        import gradscope.integrations.wandb\n"
            "    except ImportError as e:\n"
            "        print('refused:', e)\n"
            "for w in caught:\n"
            "    print('warned:', w.message)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert message in done.stdout
    assert "pip install" in done.stdout and "gradscope[wandb]" in done.stdout


def test_lightnings_wandb_logger_gets_the_steps_and_the_callbacks_findings(offline):
    """GradscopeCallback(on_step=StepLogger(logger.experiment)) in a Trainer with WandbLogger:
    each optimizer step once, with the head's gradient L2 Lightning's hook sees, the callback's
    gradscope/unhealthy through the logger, and none of the module's own logged losses lost."""
    import lightning.pytorch as pl
    from gradscope.integrations.lightning import GradscopeCallback

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = mlp(3)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    head_norms = []

    class HeadNorm(pl.Callback):
        def on_before_optimizer_step(self, trainer, module, optimizer):
            head_norms.append(float(_flat(p.grad for p in module.net[2].parameters()).norm()))

    logger = pl.loggers.WandbLogger(project="gradscope-test", save_dir=str(offline), offline=True)
    run = logger.experiment
    callback = GradscopeCallback(run=None, print_report=False, nodes=["net.0", "net.2"], on_step=StepLogger(run))
    x = torch.randn(6, 16, 8)
    data = torch.utils.data.DataLoader(list(zip(x, x.sum(2, keepdim=True))), batch_size=None)
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=logger, log_every_n_steps=1,
                         callbacks=[callback, HeadNorm()], enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    trainer.fit(Tiny(), train_dataloaders=data)
    log_report(callback.report, run)
    run.finish()
    back = OfflineRun(run_folder(run))
    rows = gradscope_rows(back, node="net.0")
    assert sorted(rows) == list(range(6)) == list(range(trainer.global_step))
    assert [rows[s]["gradscope/grad_l2/net.2"] for s in range(6)] == pytest.approx(head_norms, rel=1e-5)
    history = back.history()
    assert len([row for row in history if "train_loss" in row]) == 6
    unhealthy = [row["gradscope/unhealthy"] for row in history if "gradscope/unhealthy" in row]
    assert unhealthy == [float(not callback.report.healthy())]
    assert back.summary()["gradscope/steps"] == 6


def test_the_docs_example_runs_offline(offline, monkeypatch, capsys):
    """docs/wandb.md's runnable example, as written, into an offline run: the scalars of every
    step and the findings table are in the folder it wrote."""
    with open(os.path.join(SOURCE, "docs", "wandb.md"), encoding="utf-8") as f:
        (code,) = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", f.read(), re.S)
    monkeypatch.chdir(offline)
    exec(compile(code, "docs/wandb.md example", "exec"), {"__name__": "__main__"})
    assert "verdict: healthy" in capsys.readouterr().out
    (folder,) = glob.glob(str(offline / "wandb" / "offline-run-*"))
    back = OfflineRun(folder)
    assert len(gradscope_rows(back, node="fc1")) == 100
    assert back.table("gradscope/findings")[1] == []
