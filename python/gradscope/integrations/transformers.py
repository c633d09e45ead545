"""Hugging Face transformers: GradscopeCallback audits the model that transformers.Trainer trains,
and the attention implementation "gradscope_sdpa" measures each layer's heads (docs/integrations.md).

    from gradscope.integrations.transformers import GradscopeCallback
    trainer = transformers.Trainer(model, args, train_dataset=data, callbacks=[GradscopeCallback()])
    trainer.train()  # the run in <args.output_dir>/gradscope; the report printed at the end

What the callback sees:
- each optimizer step (one audited step per optimizer step, gradient accumulation included): the
  update against the values at the step's first forward;
- the global gradient norm before clipping, as the Trainer computes it: the value its
  accelerator's clip_grad_norm_ returns (clipping by max_grad_norm or not), and with
  max_grad_norm > 0 the norm the optimizer then steps with;
- the training loss of the step: the sum of what training_step returns for its micro-batches
  (each already a share of the step's loss), NaN included (the Trainer's own log replaces a NaN
  loss by an average: logging_nan_inf_filter);
- attention: while it trains, a model whose attention implementation is "sdpa" (transformers'
  default) runs "gradscope_sdpa": the stock sdpa, plus the audit's q/k measurement of every
  layer's heads at the audit's measured steps (attention_every); restored at the end.
- evaluation passes (eval mode, no gradients) are not training: not recorded.

TrainerCallback's events do not carry the Trainer, and the norm before clipping and each
micro-batch's loss exist only inside it: the callback finds the Trainer that calls it (the
caller whose callback list holds it) when training begins, and wraps that Trainer's
training_step and accelerator.clip_grad_norm_ for the fit (instance attributes, removed at the end).
"""
import inspect
import math
import os
import weakref

import torch
from torch import nn

from .._audit import Audit
from .._engine import Error
from ._callback import checked_options, end_text, global_grad_norm
from ._requires import require

_transformers = require("transformers", "transformers", (4, 56), "tested with transformers 5.25")
from transformers import AttentionInterface, Trainer, TrainerCallback  # noqa: E402  (after the check)
from transformers.integrations.sdpa_attention import create_position_bias_mask, sdpa_attention_forward  # noqa: E402
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask  # noqa: E402

__all__ = ["GradscopeCallback", "audit_of", "default_nodes", "ATTENTION"]

ATTENTION = "gradscope_sdpa"

# Every module of an audited model -> its Audit: how gradscope_sdpa, called with the attention
# module alone, finds where to record. Weak: a model dropped takes its entries with it.
_AUDIT_OF_MODULE = weakref.WeakKeyDictionary()


def gradscope_sdpa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
    """transformers' sdpa attention, with the heads measured for the audit of the model `module`
    belongs to (at its measured steps, training forwards only); without an audit, sdpa alone."""
    audit = _AUDIT_OF_MODULE.get(module)
    if audit is not None and module.training and torch.is_grad_enabled():
        # The mask sdpa_attention_forward gives scaled_dot_product_attention: causal only when
        # there is no mask and more than one query (its rule); a position bias is part of it.
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        causal = bool(query.shape[2] > 1 and attention_mask is None and causal)
        mask, bias = attention_mask, kwargs.get("position_bias")
        if bias is not None:
            mask, causal = create_position_bias_mask(bias, attention_mask, causal, query, key), False
        keys = key[:, :, :query.shape[2], :] if causal and key.shape[2] > query.shape[2] else key
        audit.attention(module, q=query, k=keys, mask=mask, is_causal=causal, scale=scaling)
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                  is_causal=is_causal, **kwargs)


# Registered once, when the integration is imported: attn_implementation="gradscope_sdpa" then
# works for any model that dispatches through AttentionInterface; its masks are sdpa's.
AttentionInterface.register(ATTENTION, gradscope_sdpa)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)

# Audit options the Trainer decides.
_DECIDED = {"run": "pass run= to GradscopeCallback (a folder under args.output_dir, or an absolute path)",
            "process_group": "the Trainer decides it: the default group when it trains distributed",
            "scaler": "the Trainer's accelerator holds it"}


def audit_of(trainer):
    """The Audit of the GradscopeCallback among `trainer`'s callbacks while it trains, else None."""
    for callback in getattr(getattr(trainer, "callback_handler", None), "callbacks", None) or ():
        if isinstance(callback, GradscopeCallback):
            return callback.audit
    return None


def _layers(model):
    """The model's stack of layers: the nn.ModuleList holding the most parameters (a decoder's
    `layers`, GPT-2's `h`); None when there is none."""
    best, most = None, 0
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module):
            count = sum(p.numel() for p in module.parameters())
            if count > most:
                best, most = module, count
    return best


def default_nodes(model):
    """The nodes GradscopeCallback audits unless nodes= is given: in every layer, each child that
    holds a matrix (the attention and the MLP; norms are left out), then an output head whose
    weight is not the input embedding's. Names are paths of model.named_modules()."""
    layers = _layers(model)
    if layers is None:
        return None  # the Audit's own default
    path_of = {id(m): name for name, m in model.named_modules()}
    nodes = [path_of[id(child)] for layer in layers for child in layer.children()
             if any(p.dim() >= 2 for p in child.parameters())]
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    tied = head is not None and embedding is not None and head.weight is embedding.weight
    if head is not None and not tied and id(head) in path_of:
        nodes.append(path_of[id(head)])
    return nodes or None


def _calling_trainer(callback):
    """The transformers.Trainer whose callbacks hold `callback`, from the frames calling it."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, Trainer) and callback in owner.callback_handler.callbacks:
                return owner
            frame = frame.f_back
    finally:
        del frame
    return None


class GradscopeCallback(TrainerCallback):
    """Audits the model transformers.Trainer trains. `run`: the run's folder, relative to
    args.output_dir (None: no run saved); `print_report`: print the report when training ends
    (main process); `attention`: measure the heads through gradscope_sdpa when the model's
    attention is sdpa; every other keyword is gradscope.Audit's (nodes=, attention_every=, ...;
    nodes defaults to default_nodes(model)). After training, `report` holds the gradscope.Report."""

    def __init__(self, run="gradscope", print_report=True, attention=True, **audit_options):
        self._run = checked_options(_DECIDED, run, {"print_report": print_report, "attention": attention},
                                    audit_options)
        self._print = print_report
        self._attention = attention
        self._options = audit_options
        self.audit = None
        self.report = None
        self.run_dir = None
        self.attention_note = None  # why attention is not measured, when it is not
        self._trainer = None
        self._model = None
        self._restore = []
        self._restore_attention = None
        self._losses = []
        self._norm_before = math.nan

    # --- set-up --------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self.audit is not None:  # a training that raised (no event says so): its steps are kept
            self._close()
        trainer = _calling_trainer(self)
        if trainer is None:
            raise Error("GradscopeCallback: no transformers.Trainer holding this callback called it; "
                        "pass it in Trainer(callbacks=[...]) or trainer.add_callback(...)")
        self._trainer, self._model = trainer, model
        if self._run is not None:
            self.run_dir = self._run if os.path.isabs(self._run) else os.path.join(args.output_dir, self._run)
        options = dict(self._options)
        options.setdefault("nodes", default_nodes(model))
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized() and \
            args.world_size > 1
        scaler = getattr(trainer.accelerator, "scaler", None)
        # The accelerator unscales the gradients before it clips (and so before the step).
        mixed = {} if scaler is None else dict(scaler=scaler, parameter_grads_unscaled=True)
        self.audit = Audit(model, run=self.run_dir, process_group=True if distributed else None, **mixed, **options)
        for module in model.modules():
            _AUDIT_OF_MODULE[module] = self.audit
        self._wrap(trainer)
        self._use_attention(model)

    def _wrap(self, trainer):
        step, clip = trainer.training_step, trainer.accelerator.clip_grad_norm_

        def training_step(*a, **kw):
            loss = step(*a, **kw)
            if isinstance(loss, torch.Tensor) and loss.numel() == 1:
                self._losses.append(loss.detach())
            return loss

        def clip_grad_norm_(*a, **kw):
            norm = clip(*a, **kw)  # the total norm before clipping (inf as max_norm: no clipping)
            if norm is not None:
                self._norm_before = float(norm)
            return norm

        trainer.training_step = training_step
        trainer.accelerator.clip_grad_norm_ = clip_grad_norm_
        self._restore += [(trainer, "training_step"), (trainer.accelerator, "clip_grad_norm_")]

    def _use_attention(self, model):
        implementation = getattr(getattr(model, "config", None), "_attn_implementation", None)
        if not self._attention:
            self.attention_note = "attention=False"
        elif implementation == ATTENTION:
            pass
        elif implementation == "sdpa" and hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(ATTENTION)
            self._restore_attention = "sdpa"
        else:
            self.attention_note = (f"attention not measured: the model's attention implementation is "
                                   f"{implementation!r}; gradscope measures 'sdpa' (as '{ATTENTION}')")

    # --- each step -----------------------------------------------------------------------------
    def on_step_begin(self, args, state, control, **kwargs):
        if self.audit is not None:
            self.audit.step_begins()  # the values the update is measured against
            self._losses = []
            self._norm_before = math.nan

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self.audit is None or math.isnan(self._norm_before):
            return
        clipped = args.max_grad_norm is not None and args.max_grad_norm > 0
        self.audit.record_grad_norm(self._norm_before, global_grad_norm(self._model) if clipped else None)

    def on_optimizer_step(self, args, state, control, **kwargs):
        if self.audit is None:
            return
        if self._losses:
            self.audit.record_loss(float(torch.stack([l.float().reshape(()) for l in self._losses]).sum()))
        self._losses = []
        self.audit.after_step()

    # --- the end -------------------------------------------------------------------------------
    def on_train_end(self, args, state, control, **kwargs):
        if self.audit is None:
            return
        try:
            self.report = self.audit.report()  # a collective when distributed: every rank
        finally:
            self._close()
        if not state.is_world_process_zero:
            return
        if self._print:
            print(end_text(self.report, "this training", self.run_dir, [self.attention_note]))

    def _close(self):
        for owner, name in self._restore:
            owner.__dict__.pop(name, None)  # the class's method again
        self._restore = []
        if self._restore_attention and self._model is not None:
            self._model.set_attn_implementation(self._restore_attention)
            self._restore_attention = None
        audit, self.audit = self.audit, None
        for module in list(_AUDIT_OF_MODULE.keys()):
            if _AUDIT_OF_MODULE.get(module) is audit:
                del _AUDIT_OF_MODULE[module]
        audit.close()
        self._trainer = None
