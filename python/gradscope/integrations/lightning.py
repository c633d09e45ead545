"""GradscopeCallback: one line in Lightning's Trainer(callbacks=[...]) audits the LightningModule
it fits (docs/python.md, "Lightning").

    from gradscope.integrations.lightning import GradscopeCallback
    trainer = lightning.Trainer(callbacks=[GradscopeCallback()], gradient_clip_val=1.0)
    trainer.fit(module, data)  # the run in <trainer.log_dir>/gradscope; the report printed at the end

What it sees, through Lightning's hooks (no change to the module or the loop):
- each optimizer step, after it ran (the audit's after_step: the update against the values at the
  step's first forward), gradient accumulation included (one audited step per optimizer step);
- the global gradient norm before clipping, in on_before_optimizer_step (Lightning calls it with
  the gradients accumulated, averaged across DDP ranks and unscaled, before it clips), and with
  gradient_clip_val the norm it clipped to, after;
- the training loss of the step: the mean of its micro-batches' losses (Lightning hands each one
  divided by accumulate_grad_batches);
- validation and sanity-check passes are not training (eval mode, no gradients): not recorded.
The run is saved under trainer.log_dir (rank 0 writes; under DDP the audit merges every rank
over torch.distributed's default group), the report is printed at on_train_end and sent to the
Trainer's loggers: TensorBoard gets the report as text and two scalars, other loggers the
scalars (gradscope/unhealthy, gradscope/flagged_nodes).

Attention written by the module itself reaches the audit through audit_of(self.trainer).
"""
import math
import os

import torch

from .._audit import Audit
from ._callback import checked_options, end_text, global_grad_norm
from ._requires import require

_lightning = require("lightning", "lightning", (2, 0), "tested with lightning 2.6")
import lightning.pytorch as _pl  # noqa: E402  (after the check, which names the extra)

__all__ = ["GradscopeCallback", "audit_of"]

# Audit options the Trainer decides: where the run goes, the process group, the scaler.
_DECIDED = {"run": "pass run= to GradscopeCallback (a folder under trainer.log_dir, or an absolute path)",
            "process_group": "the strategy decides it: the default group under DDP",
            "scaler": "Lightning's precision plugin holds it"}


def audit_of(trainer):
    """The Audit of the GradscopeCallback among `trainer`'s callbacks while it fits, else None:
    for attention written by hand (audit.attention(self, q=q, k=k, is_causal=True))."""
    for callback in getattr(trainer, "callbacks", None) or ():
        if isinstance(callback, GradscopeCallback):
            return callback.audit
    return None


class GradscopeCallback(_pl.Callback):
    """Audits the LightningModule of trainer.fit(). `run`: the run's folder, relative to
    trainer.log_dir (None: no run saved); `print_report`: print the report at the end of
    training (rank 0); every other keyword is gradscope.Audit's (nodes=, attention_every=, ...).
    After fit, `report` holds the gradscope.Report."""

    def __init__(self, run="gradscope", print_report=True, **audit_options):
        self._run = checked_options(_DECIDED, run, {"print_report": print_report}, audit_options)
        self._print = print_report
        self._options = audit_options
        self.audit = None
        self.report = None
        self.run_dir = None
        self._reset_window()

    def _reset_window(self):
        self._stepped = False
        self._norm_before = math.nan
        self._loss_sum = 0.0
        self._losses = 0

    # --- set-up --------------------------------------------------------------------------------
    def setup(self, trainer, pl_module, stage):
        if stage != "fit" or self.audit is not None:
            return
        log_dir = trainer.log_dir  # a collective under DDP: every rank asks
        if self._run is not None:
            self.run_dir = self._run if os.path.isabs(self._run) else \
                os.path.join(log_dir or trainer.default_root_dir, self._run)
        import torch.distributed as dist
        group = True if trainer.world_size > 1 and dist.is_available() and dist.is_initialized() else None
        scaler = getattr(getattr(trainer, "precision_plugin", None), "scaler", None)
        # Lightning unscales the gradients before on_before_optimizer_step and the step.
        mixed = {} if scaler is None else dict(scaler=scaler, parameter_grads_unscaled=True)
        self.audit = Audit(pl_module, run=self.run_dir, process_group=group, **mixed, **self._options)
        self._reset_window()

    # --- each step -----------------------------------------------------------------------------
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.audit is not None:
            self.audit.step_begins()  # training_step may never call the module's own forward

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if self.audit is None:
            return
        self._stepped = True
        self._norm_before = global_grad_norm(pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self.audit is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            self._loss_sum += float(loss.detach())  # divided by accumulate_grad_batches already
            self._losses += 1
        if not self._stepped:
            return  # a micro-batch of an accumulating step
        clipped = trainer.gradient_clip_val and trainer.gradient_clip_algorithm in (None, "norm")
        if not math.isnan(self._norm_before):
            self.audit.record_grad_norm(self._norm_before, global_grad_norm(pl_module) if clipped else None)
        if self._losses:
            # The step's loss: the micro-batches' losses, each over accumulate_grad_batches, added.
            scale = trainer.accumulate_grad_batches / self._losses if self._losses < trainer.accumulate_grad_batches \
                else 1.0
            self.audit.record_loss(self._loss_sum * scale)
        self._reset_window()
        self.audit.after_step()

    # --- the end -------------------------------------------------------------------------------
    def on_train_end(self, trainer, pl_module):
        self._finish(trainer)

    def _finish(self, trainer):
        if self.audit is None:
            return
        self.report = self.audit.report()  # a collective under DDP: every rank
        self._close()
        if not trainer.is_global_zero:
            return
        text = end_text(self.report, "this fit", None)
        if self._print:
            print(end_text(self.report, "this fit", self.run_dir))
        flagged = sum(1 for flags in self.report.flags().values() if flags != ["HEALTHY"])
        metrics = {"gradscope/unhealthy": float(not self.report.healthy()), "gradscope/flagged_nodes": float(flagged)}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)
            experiment = getattr(logger, "experiment", None)
            if hasattr(experiment, "add_text"):  # TensorBoard: the report as text, indented as code
                experiment.add_text("gradscope/report", "\n".join("    " + line for line in text.splitlines()),
                                    global_step=trainer.global_step)

    def on_exception(self, trainer, pl_module, exception):
        self._close()  # the committed steps stay readable

    def teardown(self, trainer, pl_module, stage):
        if stage == "fit":
            self._finish(trainer)  # a fit that never trained (max_steps=0) has no on_train_end

    def _close(self):
        if self.audit is not None:
            audit, self.audit = self.audit, None
            audit.close()
