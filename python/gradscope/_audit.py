"""Audit: forward hooks on a PyTorch model, every measurement made by the C++ engine.

Nodes are the model's direct children that own parameters (the model itself, as "model", when
none does), as in C++. In an nn.Sequential (the model, or one holding scoped submodules at any
depth) the parameter-free children (activations, dropout) belong to the audited child before them: the node's activation is the output of the
last one, and a child followed by tanh, sigmoid, hardtanh or softsign also records its own
output as the pre-activation (for SATURATED). In an nn.ModuleList the same holds as far as the
forward feeds each of those children the previous one's output (a list's order need not be the
forward's). Elsewhere a node's activation is its module's output. A module called several times in one step is recorded at every call; the calls of a
step merge into that step's statistics. A tuple or list output is measured by its first tensor
(an LSTM's output, not its state); any other output is an Error naming the node.

Only training passes are recorded: a forward with gradients enabled through modules in training
mode (not one under torch.no_grad() or after model.eval(), nor inside `with audit.paused():`),
and a forward that torch.utils.checkpoint recomputes in backward once. Mixed precision: pass the
GradScaler (scaler=); every gradient statistic is then reported unscaled, and a step skipped on
overflow counts in report().loss_scale (LOSS_SCALE_OVERFLOW), never as NAN.

torch.compile: the hooks are never traced (torch.compiler.disable), so each audited node is a
graph break and the compiled model is recorded as the eager one; a step whose gradients come
from compiled code that skipped the hooks (compiled before the Audit was made) is an Error.
"""
import contextlib
import math
import numbers
import os
import sys
import weakref

import torch
from torch import nn

from . import _engine
from ._engine import Error
from ._distributed import resolve_process_group
from ._hooks import _Hooks, _has_params
from ._loss_scale import _LossScale, _grads_unscaled
from ._run import run_spec
from ._report import Report
from ._scope import resolve_scopes, scoped_submodules
from ._shards import Shards, module_type_name

def _scalar(what, value):
    """`value` as a float: a real number, or a real tensor of one element (read with item()).
    A bool (True reads as 1.0), a complex number and an integer past float's range are refused."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Error(f"audit: {what} must be a number or a one-element tensor, got a tensor of shape "
                        f"{tuple(value.shape)}")
        if value.dtype == torch.bool or value.is_complex():
            raise Error(f"audit: {what} must be a real number, got a {value.dtype} tensor")
        return float(value.detach().item())
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Error(f"audit: {what} must be a number or a one-element tensor, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise Error(f"audit: {what} must be a number within float's range, got an integer of "
                    f"{int(value).bit_length()} bits") from None


# Batch indices travel as float64, exact for integers up to 2**53.
_LARGEST_BATCH = 2 ** 53


def _batch_index(what, batch):
    """`batch` as the float the run stores: an integer index in [0, 2**53]; None stays None."""
    if batch is None:
        return None
    integral = isinstance(batch, numbers.Integral) and not isinstance(batch, bool)
    if integral and 0 <= batch <= _LARGEST_BATCH:
        return float(batch)
    shown = f"an integer of {int(batch).bit_length()} bits" if integral and int(batch).bit_length() > 64 \
        else repr(batch) if len(repr(batch)) <= 40 else type(batch).__name__
    raise Error(f"audit: {what}: batch must be an integer index from 0 to 2**53, got {shown}")


def _resolve_nodes(model, nodes):
    """[(id, module)]: the default nodes, or those named (paths of model.named_modules())."""
    if nodes is None:
        found = [(name, child) for name, child in model.named_children() if _has_params(child)]
        if found:
            return found
        if not _has_params(model):
            raise Error(f"audit: model of type {type(model).__name__} has no parameters; nothing to audit")
        return [("model", model)]
    if isinstance(nodes, dict):
        return list(nodes.items())
    modules = dict(model.named_modules())
    resolved = []
    for name in nodes:
        if name not in modules:
            raise Error(f"audit: no module '{name}' in the model; modules: {sorted(m for m in modules if m)[:10]}")
        resolved.append((name, modules[name]))
    return resolved


def _node_spec(node_id, module, measured):
    """The engine's view of a node: its type, submodules and parameters, each parameter the
    tensor `measured` gives (a sharded one's local shard, _shards.py)."""
    subs = [(path, module_type_name(m)) for path, m in module.named_modules() if path]
    params = [(path, measured(p)) for path, p in module.named_parameters()]
    if not params:
        raise Error(f"audit: node '{node_id}' ({module_type_name(module)}) has no parameters")
    return (node_id, module_type_name(module), subs, params)


def _options(sample_every, thresholds, channels, channels_all_nodes, leakage_pairs, leakage_every,
             free_nodes, gradient_snr, threads, keep_records, keep_steps, scopes, on_step, histogram_every=0,
             process_group=None, ranks_average_gradients=True, attention_every=10):
    o = _engine.AuditOptions()
    o.process_group = resolve_process_group(process_group, "audit")
    o.ranks_average_gradients = bool(ranks_average_gradients)
    if thresholds is not None:
        o.thresholds = thresholds
    o.sample_every = sample_every
    o.threads = threads
    o.gradient_snr = gradient_snr
    o.channels = dict(channels or {})
    o.channels_all_nodes = channels_all_nodes
    o.leakage_pairs = [tuple(p) for p in leakage_pairs]
    o.leakage_every = leakage_every
    if isinstance(histogram_every, bool) or not isinstance(histogram_every, int) or histogram_every < 0:
        raise Error(f"audit: histogram_every must be an integer >= 0 (0: no histograms), got {histogram_every!r}")
    o.histogram_every = histogram_every
    if isinstance(attention_every, bool) or not isinstance(attention_every, int) or attention_every < 0:
        raise Error(f"audit: attention_every must be an integer >= 0 (0: no attention statistics), "
                    f"got {attention_every!r}")
    o.attention_every = attention_every
    o.free_nodes = list(free_nodes)
    o.keep_records = keep_records
    o.keep_steps = keep_steps
    o.scopes = scopes
    if on_step is not None:
        if not callable(on_step):
            raise Error(f"audit: on_step must be callable, got {type(on_step).__name__}")
        o.on_step = on_step
    return o


class Audit(_Hooks, _LossScale):
    """Per-node gradient health of a PyTorch model, measured by gradscope's C++ engine.

    Use it as a context manager: its hooks are removed when the block ends, also on an
    exception. `run` writes every audited step to a run directory that `gradscope report`,
    `html`, `diff` and `ls` read. `tensorboard` writes the same steps live to a TensorBoard
    event file in that directory (with `run` too: both, from the same records).
    `histogram_every=N` counts histograms of the elements of each node's activation, output
    gradient and parameter gradients every N-th audited step (0, the default: none); the run
    store and the TensorBoard file keep them (docs/tensorboard.md).
    `attention_every=N` (10 by default; 0: never) measures attention every N-th audited step:
    each nn.MultiheadAttention inside an audited node from its own weights and masks, and the
    logits you pass to attention() (docs/attention.md).
    `process_group` (a torch.distributed ProcessGroup, or True / "default" for the default
    group) merges every audited step across the group's ranks, so that report(), records() and
    on_step describe the whole job on every rank; constructing the Audit is then a collective.
    Only rank 0 writes `run` and `tensorboard`: the other ranks ignore them and create nothing
    (docs/distributed.md). `ranks_average_gradients` (True, as DDP): each rank's output
    gradients are divided by the world size, so the merged ones equal the one-process run DDP
    stands for; False for a job that sums the ranks' gradients.
    `scaler`: mixed precision (docs/python.md, "Your training loop"). A torch GradScaler
    instance: its scale is read at each step's first forward, gradient statistics are reported
    unscaled, step(optimizer) runs scaler.step(optimizer), and a step whose gradients overflowed
    and whose update was skipped counts in report().loss_scale instead of being judged NAN.
    Another object with get_scale() and step() works the same, but the audit cannot see whether
    it unscaled the parameter gradients before step(): say so with `parameter_grads_unscaled`
    (True or False; required for such a scaler). A number: a fixed loss scale (as
    set_loss_scale, `parameter_grads_unscaled` False unless given).
    torch.compile: make the Audit on the model, then compile it (or pass torch.compile's wrapper:
    the model inside is audited, with the same node ids); each audited node is then a graph break
    (fullgraph=True cannot be used). Code compiled before the Audit runs without its hooks: such a
    step is an Error at step() or after_step() (docs/python.md, "torch.compile").
    """

    def __init__(self, model, sample_every=1, run=None, *, nodes=None, thresholds=None, channels=None,
                 channels_all_nodes=None, leakage_pairs=(), leakage_every=10, free_nodes=(),
                 gradient_snr=False, threads=1, keep_records=True, keep_steps=100, scopes=None, on_step=None,
                 run_name=None, overwrite=False, tensorboard=None, histogram_every=0, process_group=None,
                 ranks_average_gradients=True, scaler=None, parameter_grads_unscaled=None, attention_every=10):
        if not isinstance(model, nn.Module):
            raise TypeError(f"audit: model must be a torch.nn.Module, got {type(model).__name__}")
        # torch.compile(model)'s wrapper: audit the model it compiles (the same nodes and ids as
        # eager). Looked up, not imported: importing dynamo takes a second.
        compiled = getattr(sys.modules.get("torch._dynamo.eval_frame"), "OptimizedModule", None)
        if compiled is not None and isinstance(model, compiled):
            model = model._orig_mod
        if isinstance(sample_every, bool) or not isinstance(sample_every, int) or sample_every < 1:
            raise Error(f"audit: sample_every must be an integer >= 1, got {sample_every!r}")
        self._model = model
        self._nodes = _resolve_nodes(model, nodes)
        process_group = resolve_process_group(process_group, "audit")
        self._shards = Shards(model, self._nodes, process_group, gradient_snr)
        specs = [_node_spec(i, m, self._shards.measured) for i, m in self._nodes]
        spec = run_spec(run, run_name, overwrite, "audit")
        options = _options(sample_every, thresholds, channels, channels_all_nodes, leakage_pairs,
                           leakage_every, free_nodes, gradient_snr, threads, keep_records, keep_steps,
                           resolve_scopes(self._nodes, scopes), on_step, histogram_every, process_group,
                           ranks_average_gradients, attention_every)
        options.parameter_shards = self._shards.options
        options.ranks_share_batch = self._shards.share_batch
        if tensorboard is not None:
            tensorboard = os.fspath(tensorboard)
        self._engine = _engine.AuditEngine(specs, options, spec, tensorboard)
        # The engine chose the scoped submodules on its copy of the module tree (same paths).
        self._submodules = scoped_submodules(self._nodes, self._engine.node_ids())
        # attention() runs in every forward: its lookups are dictionaries, made once.
        self._module_of_id = {i: m for i, m in list(self._nodes) + list(self._submodules)}
        self._id_of_module = {id(m): i for i, m in reversed(list(self._nodes) + list(self._submodules))}
        # A module inside a node (the one that calls scaled_dot_product_attention, say) records on
        # that node, as nn.MultiheadAttention's hook does.
        self._holder_of_module = {id(m): i for i, node in reversed(self._nodes) for m in node.modules()}
        self._sample_every = sample_every
        self._attention_every = attention_every
        self._step = 0
        self._audited = True
        self._mode = None            # "step" or "after_step", from the first call
        self._snapshot = None        # parameter values at this step's first forward (after_step)
        self._snapshot_step = -1
        self._params = []
        seen = set()
        for _, m in self._nodes:
            for p in m.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    self._params.append(p)
        # What the engine measures for each of them (a DTensor's local shard, else itself).
        self._measured = [self._shards.measured(p) for p in self._params]
        # Whether a forward reached any hook since the last step, and the gradients then: a step
        # with new gradients that no hook saw is refused (_check_forward_seen).
        self._hooks_ran = False
        self._grad_marks = self._marks()
        self._handles = []
        self._chains = []  # nn.ModuleList children grouped with the activations after them
        self._scaler = None
        self._scaler_unscales = None  # what a scaler that is not torch's says of its gradients
        try:
            self._take_scaler(scaler, parameter_grads_unscaled)
        except BaseException:
            self.close()
            raise
        try:
            self._install_hooks(nodes is None and isinstance(model, nn.Sequential))
        except BaseException:
            self.close()
            raise

    def _step_begins(self, training):
        # The scale this step's backward will carry: GradScaler changes it only in update(),
        # after the step.
        if self._scaler is not None and self._audited and training:
            self._set_scaler_scale(parameter_grads_unscaled=False)
        # For after_step(): the values before the optimizer step, taken at the step's first
        # forward. Not needed (and not taken) once step() has been seen.
        if self._mode == "step" or not self._audited or self._snapshot_step == self._step:
            return
        with torch.no_grad():
            self._snapshot = [p.detach().clone() for p in self._measured]
        self._snapshot_step = self._step

    def step_begins(self):
        """For after_step() when the audited model's own forward is not called (a
        LightningModule whose training_step calls its submodules): what its first forward of a
        step does, now: the parameter values the update is measured against. Call it before each
        (micro-)batch's forward; only the first of a step takes them."""
        self._step_begins(self._model.training)

    # --- the training loop ---------------------------------------------------------------------
    def tap(self, node, x):
        """Records `x` as the output of `node` (for forwards the hooks cannot see); returns x."""
        self._hooks_ran = True
        if self._audited:
            self._engine.tap(node, x)
        return x

    def attention(self, node, logits=None, mask=None, *, q=None, k=None, is_causal=False, scale=None):
        """Records the attention of `node` (an audited node's or scoped submodule's id, or a
        module: an audited one, or any module inside an audited node, recorded on that node, as
        nn.MultiheadAttention is): per head the largest pre-softmax logit, the entropy of the
        weights and the share of queries whose top key takes > 0.99 of them, judged for
        ATTENTION_LOGIT_GROWTH and ATTENTION_ENTROPY_COLLAPSE. Give either

        - `logits`, the pre-softmax logits, [batch, heads, queries, keys] or [heads, queries,
          keys], and optionally `mask`, broadcasting to them: bool, True where a query may attend
          (as scaled_dot_product_attention), or float, added to them (-inf hides a key); returns
          `logits`; or
        - `q` and `k` as scaled_dot_product_attention takes them ([batch, heads, tokens, dim];
          k may have fewer heads, dividing q's: grouped-query attention), with its `mask`
          (attn_mask), `is_causal` and `scale`: the logits are computed only at measured steps,
          in blocks of queries (at most 32 MiB of them at a time); returns None.

        Measured every `attention_every`-th audited step (Audit option, 10 by default); at the
        other steps it returns without reading the tensors (q and k's shapes are checked at every
        call). Evaluation passes are not recorded."""
        self._hooks_ran = True
        if (logits is None) == (q is None and k is None):
            raise Error("audit: attention: give the logits, or q and k (scaled_dot_product_attention's), not both")
        if logits is not None and (is_causal or scale is not None):
            raise Error("audit: attention: is_causal and scale go with q and k; with logits, pass a mask")
        if not self._audited:
            return logits
        if isinstance(node, nn.Module):
            module, node = node, self._node_id_of(node)
        else:
            module = self._module_of_id.get(node)
        # An evaluation pass is not recorded (an unknown id: the engine says so).
        training = module is None or module.training
        if logits is not None:
            if training:
                self._engine.attention(node, logits, mask)
            return logits
        if q is None or k is None:
            raise Error(f"audit: attention of node '{node}': q and k must both be given")
        for name, t in (("q", q), ("k", k), ("mask", mask)):
            if not (t is None and name == "mask") and not isinstance(t, torch.Tensor):
                raise Error(f"audit: attention of node '{node}': {name} must be a tensor, got {type(t).__name__}")
        if not isinstance(is_causal, bool):
            raise Error(f"audit: attention of node '{node}': is_causal must be True or False, got {is_causal!r}")
        if scale is not None:
            scale = _scalar(f"attention of node '{node}': scale", scale)
        if training and torch.is_grad_enabled():
            self._engine.attention_qk(node, q, k, mask, is_causal, scale)
        return None

    def record_output_logits(self, logits):
        """The output layer's logits ([..., vocabulary]) of a training forward: every
        `attention_every`-th audited step, records the mean log-partition ("log_z": the mean over
        rows of logsumexp over the last dimension, in float32; z-loss, 1e-4 x log_z^2, pulls it
        toward 0) and the mean logit ("logit_mean"). Their drift is what output logit divergence
        looks like (Wortsman et al. 2023), and the loss cannot show it (softmax ignores a shift).
        Stored, drawn in TensorBoard and kept in the run; not judged yet. Evaluation passes (the
        model in eval mode, or no_grad) are not recorded. Returns `logits`."""
        if not isinstance(logits, torch.Tensor):
            raise Error(f"audit: record_output_logits: logits must be a tensor, got {type(logits).__name__}")
        self._hooks_ran = True
        if self._audited and self._model.training and torch.is_grad_enabled():
            self._engine.output_logits(logits)
        return logits

    def _node_id_of(self, module):
        node_id = self._id_of_module.get(id(module), self._holder_of_module.get(id(module)))
        if node_id is None:
            raise Error(f"audit: attention: module {type(module).__name__} is not inside an audited node; "
                        f"pass nodes=[...] naming a module that holds it, or its id")
        return node_id

    def record_loss(self, loss, batch=None):
        """The step's training loss (a number or a one-element tensor; a tensor is read with
        item(), which waits for the device), judged for LOSS_SPIKE and DIVERGENCE. Kept at every
        step, sampled or not; NaN and Inf are kept (a non-finite loss is a divergence). The first
        value of a step counts. `batch`, the index of the step's batch in your data, is what a
        LOSS_SPIKE names for you to inspect. step(optimizer, loss=..., batch=...) does the same."""
        # Every argument is checked before any is kept: a refused call records nothing.
        self._keep_loss(_scalar("record_loss: loss", loss), _batch_index("record_loss", batch))

    def _keep_loss(self, value, index):
        """Keeps a checked loss and, when given, its batch index (record_loss and step)."""
        self._engine.record_loss(value)
        if index is not None:
            self._engine.record_scalar("batch", index)

    def record_grad_norm(self, before_clip, applied=None):
        """The global L2 of the gradients as backward produced them (what
        torch.nn.utils.clip_grad_norm_ returns) and, when known, the norm after clipping: the
        median and 99th percentile in the report give a clipping value, and the clipping rate says
        how often it acted. clip_grad_norm_ does this for you."""
        after = math.nan if applied is None else _scalar("record_grad_norm: applied", applied)
        self._engine.record_grad_norm(_scalar("record_grad_norm: before_clip", before_clip), after)

    def clip_grad_norm_(self, max_norm):
        """torch.nn.utils.clip_grad_norm_ over the audited model's parameters (L2), recording the
        norm before and after clipping; returns the norm before, as torch's does. With a
        GradScaler, call scaler.unscale_(optimizer) first."""
        if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not math.isfinite(max_norm) \
                or max_norm <= 0:
            raise Error(f"audit: clip_grad_norm_: max_norm must be a finite number > 0, got {max_norm!r}")
        total = torch.nn.utils.clip_grad_norm_([p for p in self._params if p.grad is not None], max_norm)
        before = float(total)
        # torch scales by max_norm / (norm + 1e-6) when that is below 1.
        factor = max_norm / (before + 1e-6)
        self._engine.record_grad_norm(before, before * factor if factor < 1 else before)
        return total

    def step(self, optimizer, loss=None, grad_norm=None, batch=None):
        """Ends the step: measures the parameter gradients and values, runs optimizer.step()
        (scaler.step(optimizer) with a scaler; or calls `optimizer` when it is a function) and
        measures the real update. An optimizer that holds none of the audited parameters is an
        Error, before anything runs. `loss` is record_loss(loss); `grad_norm`, the norm before
        clipping (clip_grad_norm_'s result), is record_grad_norm(grad_norm); `batch` goes with the
        loss (record_loss)."""
        if loss is None and batch is not None:
            raise Error("audit: step: batch is given without a loss")
        function = callable(optimizer) and not hasattr(optimizer, "step")
        if not function:
            self._check_optimizer(optimizer)
        # Every value is checked before any is kept: a refused step records nothing.
        value = None if loss is None else _scalar("step: loss", loss)
        index = _batch_index("step", batch)
        norm = None if grad_norm is None else _scalar("step: grad_norm", grad_norm)
        self._check_forward_seen("step")
        if value is not None:
            self._keep_loss(value, index)
        if norm is not None:
            self._engine.record_grad_norm(norm, math.nan)
        if function:
            update = optimizer
        else:
            update = optimizer.step if self._scaler is None else (lambda: self._scaler.step(optimizer))
        if self._scaler is not None and self._audited:
            unscaled = self._scaler_unscales
            if unscaled is None:
                unscaled = _grads_unscaled(self._scaler, None if function else optimizer)
            self._set_scaler_scale(unscaled)
        self._mode = "step"
        self._snapshot = None
        passes = None if function else getattr(optimizer, "_gradscope_passes", None)
        if self._audited:  # the engine measures nothing at other steps
            self._shards.take_grads()
        try:
            if passes is not None:  # gradscope.optim: its fused pass measures for the audit
                optimizer._prepare_passes()
                self._engine.step_measured(lambda: update(), passes)
            else:
                self._engine.step(lambda: update())
        finally:
            self._shards.drop_grads()
        self._next_step()

    def _check_optimizer(self, optimizer):
        groups = getattr(optimizer, "param_groups", None)
        if groups is None:
            raise Error(f"audit: step() takes an optimizer or a function, got {type(optimizer).__name__}")
        audited = {id(p) for p in self._params}
        if not any(id(p) in audited for g in groups for p in g.get("params", ())):
            raise Error(f"audit: step(): the optimizer holds none of the audited model's {len(self._params)} "
                        "parameters; pass the optimizer of the audited model (or audit the model it trains)")
        if self._shards and getattr(optimizer, "_gradscope_passes", None) is not None:
            raise Error("audit: step(): gradscope.optim's fused passes do not take DTensor parameters (FSDP2, tensor "
                        "parallelism); use a torch.optim optimizer: the audit measures its update from the shards")

    @contextlib.contextmanager
    def paused(self):
        """Nothing inside the block is recorded (an evaluation pass that keeps gradients on,
        forwards for logging); the training step around it is measured as usual."""
        self._engine.pause()
        try:
            yield self
        finally:
            self._engine.resume()

    def after_step(self):
        """Ends a step whose optimizer.step() the caller has run: the same measurements as
        step(), the update taken against the values at the step's first forward."""
        if self._mode == "step":
            raise Error("audit: after_step() after step(): use one of them for the whole run")
        self._check_forward_seen("after_step")
        self._mode = "after_step"
        if self._scaler is not None and self._audited:
            # scaler.step(opt) has run: it unscaled the gradients in place, skipped or not (a
            # scaler that is not torch's: as its owner said).
            self._set_scaler_scale(True if self._scaler_unscales is None else self._scaler_unscales)
        if not self._audited:
            self._engine.step(lambda: None)
            self._next_step()
            return
        if self._snapshot is None or self._snapshot_step != self._step:
            raise Error("audit: after_step(): the model's forward did not run through the audited model this "
                        "step, so the values before opt.step() are unknown; call model(x) then opt.step() then "
                        "after_step(), once per step")
        # The engine measures before/after an update it runs: put the old values back, and
        # let its update restore the new ones (set_data swaps storage; nothing is copied).
        self._shards.take_grads()
        after = [p.data for p in self._measured]
        restored = [False]

        def restore():
            for p, a in zip(self._measured, after):
                p.data = a
            restored[0] = True

        with torch.no_grad():
            for p, b in zip(self._measured, self._snapshot):
                p.data = b
            try:
                self._engine.step(restore)
            finally:
                if not restored[0]:
                    restore()
                self._shards.drop_grads()
        self._snapshot = None
        self._next_step()

    def _next_step(self):
        self._step += 1
        self._audited = self._step % self._sample_every == 0
        self._grad_marks = self._marks()

    def _marks(self):
        """Each audited parameter's gradient as it is now (a weak reference and its version, so
        that a later backward, in place or not, shows), or None where it has none."""
        return [None if p.grad is None else (weakref.ref(p.grad), p.grad._version) for p in self._params]

    def _check_forward_seen(self, where):
        """Refuses an audited step whose parameters have new gradients that no forward through the
        hooks produced: the compiled code of a model compiled before the Audit added its hooks
        runs without them (torch.compile does not guard on hooks), and the step would record the
        parameters alone, with no activation, as healthy. New: changed since the last step (or
        since the Audit was made), so a step with no backward since is not refused."""
        seen, self._hooks_ran = self._hooks_ran, False
        if seen or not self._audited or not self._handles:  # closed: the engine says so
            return
        for p, mark in zip(self._params, self._grad_marks):
            g = p.grad
            if g is not None and (mark is None or mark[0]() is not g or mark[1] != g._version):
                raise Error(
                    f"audit: {where}(): the audited model's parameters have new gradients, but no forward of this "
                    "step reached the audit's hooks, so its activations went unrecorded. torch.compile does this "
                    "when the model (or another instance of its class) ran compiled code before the Audit added "
                    "its hooks: make the Audit before the compiled model's first call, or call "
                    "torch.compiler.reset() after making it. Without torch.compile: run the forward through the "
                    "audited model, or hand your outputs to audit.tap(node, x)")

    # --- results -------------------------------------------------------------------------------
    @property
    def current_step(self):
        return self._step

    def report(self):
        """Flags and evidence over every audited step (also after the with-block)."""
        return Report(self._engine.report())

    def assert_healthy(self):
        """Raises gradscope.HealthError naming every flagged node, worst first."""
        self._engine.report().assert_healthy()

    def records(self):
        """Every record (step, node, site, stats) kept so far."""
        return self._engine.records()

    def channel_records(self):
        """Per-channel records of the nodes with a channel view, of the kept steps (keep_steps)."""
        return self._engine.channel_records()

    def similarity_records(self):
        """Linear CKA of leakage pairs and channel groups, of the kept steps (keep_steps)."""
        return self._engine.similarity_records()

    def node_ids(self):
        return self._engine.node_ids()

    def architecture(self):
        return self._engine.architecture()

    def warnings(self):
        return self._engine.warnings()

    @property
    def hooks(self):
        """Hooks this audit has installed on the model and not yet removed."""
        return len(self._handles)

    # --- lifetime ------------------------------------------------------------------------------
    def close(self):
        """Removes every hook, keeps the findings and closes the run (idempotent)."""
        for h in getattr(self, "_handles", []):
            h.remove()
        self._handles = []
        self._snapshot = None
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
