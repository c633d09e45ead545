"""Instrumented optimizers: torch.optim.Adam, AdamW and SGD whose step updates each float32 CPU
parameter in one fused pass (gradscope's C++ passes) that also measures it, so that an audit at
every step costs about what the optimizer costs (docs/optimizers.md).

    opt = gradscope.optim.Adam(model.parameters(), lr=1e-3)   # torch.optim.Adam's arguments
    audit.step(opt)                                           # the pass measures for the audit

They are torch.optim.Optimizer subclasses with PyTorch 2.x's defaults, update formulas and state
(state_dict() loads into torch.optim.Adam and back), usable with LR schedulers. Parameters the pass
cannot take (another dtype or device, non-contiguous, amsgrad, maximize) are updated with PyTorch's
own operations, as torch.optim's single-tensor path updates them. `maximize=True` (given, or in a
loaded state_dict) ascends the objective, as torch.optim does.
"""
import torch

from . import _engine


def _plain(t):
    return t.dtype == torch.float32 and t.device.type == "cpu" and t.layout == torch.strided and t.is_contiguous()


class _Instrumented:
    """The fused passes of one optimizer; audit.step() hands them to the audit."""

    def _init_passes(self, fusable):
        self._gradscope_fusable = fusable
        self._gradscope_passes = _engine.TensorPasses()
        self._prepare_passes()

    def _prepare_passes(self):
        """Tells the passes which parameters the next step may fuse: those whose group allows it
        and whose state tensors (a loaded checkpoint's, say) are plain float32 CPU contiguous;
        audit.step() calls it before the audit looks at the parameters."""
        for group in self.param_groups:
            allowed = self._gradscope_fusable(group)
            for p in group["params"]:
                state = self.state.get(p, {})
                tensors = [t for t in state.values() if isinstance(t, torch.Tensor) and t.dim() > 0]
                if allowed and all(_plain(t) for t in tensors):
                    self._gradscope_passes.take(p)
                else:
                    self._gradscope_passes.drop(p)

    def _begin_step(self, closure):
        """The closure's loss (with gradients on, as torch.optim does); starts the passes' step."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._gradscope_passes.begin()
        return loss


class _AdamFamily(torch.optim.Optimizer, _Instrumented):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=bool(maximize)))
        self._init_passes(lambda group: not group["amsgrad"] and not group["maximize"])

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._begin_step(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            maximize = group.get("maximize", False)  # a state_dict of torch.optim.Adam may set it
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                step = int(state["step"].item())
                m, v = state["exp_avg"], state["exp_avg_sq"]
                if not group["amsgrad"] and not maximize and self._gradscope_passes.adam(
                        p, m, v, lr, beta1, beta2, eps, wd, step, self._decoupled):
                    continue
                # PyTorch 2.x's single-tensor Adam / AdamW (the path torch.optim takes on the CPU).
                grad = p.grad if not maximize else -p.grad
                if self._decoupled:
                    p.mul_(1 - lr * wd)
                elif wd != 0:
                    grad = grad.add(p, alpha=wd)
                m.lerp_(grad, 1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if group["amsgrad"]:
                    torch.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
                    denom = (state["max_exp_avg_sq"].sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
                p.addcdiv_(m, denom, value=-lr / bias_correction1)
        return loss


class Adam(_AdamFamily):
    """torch.optim.Adam with the fused, measuring pass."""


class AdamW(_AdamFamily):
    """torch.optim.AdamW (decoupled weight decay, default 1e-2) with the fused, measuring pass."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize)


class SGD(torch.optim.Optimizer, _Instrumented):
    """torch.optim.SGD (momentum, dampening, Nesterov, weight decay) with the fused, measuring pass."""

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=bool(maximize)))
        self._init_passes(lambda group: not group["maximize"])

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._begin_step(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov = group["weight_decay"], group["nesterov"]
            maximize = group.get("maximize", False)  # a state_dict of torch.optim.SGD may set it
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                first = state.get("momentum_buffer") is None
                if not maximize:
                    if momentum != 0 and first and _plain(p):
                        state["momentum_buffer"] = torch.empty_like(p, memory_format=torch.contiguous_format)
                    buf = state.get("momentum_buffer") if momentum != 0 else None
                    if self._gradscope_passes.sgd(p, buf, lr, momentum, dampening, wd, nesterov, first):
                        continue
                buf = state.get("momentum_buffer") if momentum != 0 else None
                # PyTorch 2.x's single-tensor SGD.
                d_p = p.grad if not maximize else -p.grad
                if wd != 0:
                    d_p = d_p.add(p, alpha=wd)
                if momentum != 0:
                    if first:
                        buf = torch.clone(d_p).detach()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
                    d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
                p.add_(d_p, alpha=-lr)
        return loss
