"""GradScaler on the CPU, for tests of mixed-precision training loops on a machine without
CUDA. torch's GradScaler disables itself there, and its unscale and scale-update kernels are
CUDA-only in torch 1.13; this subclass replaces exactly those with the same arithmetic in plain
torch ops, so step(), unscale_(), get_scale() and the per-optimizer stages (READY, UNSCALED,
STEPPED) are torch's own code.

Arithmetic as documented for torch.cuda.amp.GradScaler
(https://pytorch.org/docs/stable/amp.html#gradient-scaling): unscale multiplies every gradient
by 1/scale and notes whether any is inf or NaN; a step with such a gradient is skipped; update()
multiplies the scale by backoff_factor after a skipped step, by growth_factor after
growth_interval steps in a row without one.

`float16_gradients()` makes the overflow real: it rounds the gradient of a tensor through
float16, as a float16 activation's gradient is under autocast, so a scaled gradient past
65504 becomes inf.
"""
import torch
from torch.cuda.amp import GradScaler


class CpuGradScaler(GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        super().__init__(init_scale, growth_factor, backoff_factor, growth_interval, enabled=False)
        # What GradScaler.__init__ sets when enabled (it refuses without CUDA).
        self._enabled = True
        self._init_scale = init_scale
        self._scale = None
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        from collections import defaultdict
        from torch.cuda.amp.grad_scaler import _refresh_per_optimizer_state
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
        self.skipped_steps = []  # ground truth for the tests: update() calls after a skip
        self._updates = 0

    def scale(self, outputs):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not torch.isfinite(p.grad).all():
                        found_inf.fill_(1.0)
                    p.grad.mul_(inv_scale)
        return {found_inf.device: found_inf}

    def update(self, new_scale=None):
        found = [v for state in self._per_optimizer_states.values()
                 for v in state["found_inf_per_device"].values()]
        if any(v.item() > 0 for v in found):
            self.skipped_steps.append(self._updates)
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
        else:
            self._growth_tracker.add_(1)
            if self._growth_tracker.item() == self._growth_interval:
                self._scale.mul_(self._growth_factor)
                self._growth_tracker.fill_(0)
        self._updates += 1
        from collections import defaultdict
        from torch.cuda.amp.grad_scaler import _refresh_per_optimizer_state
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)


def float16_gradients(x):
    """x, whose gradient is rounded through float16 in backward (inf past 65504)."""
    if x.requires_grad:
        x.register_hook(lambda g: g.half().float())
    return x
