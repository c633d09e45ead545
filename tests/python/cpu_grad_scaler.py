"""torch.amp.GradScaler on the CPU (torch runs its unscale and scale-update kernels there since
2.3), recording which update() calls follow a skipped step: the tests' ground truth, read from
the scaler's own per-optimizer state before update() clears it. Everything else is torch's code.

`float16_gradients()` makes the overflow real: it rounds the gradient of a tensor through
float16, as a float16 activation's gradient is under autocast, so a scaled gradient past
65504 becomes inf.
"""
import torch


class CpuGradScaler(torch.amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval)
        self.skipped_steps = []  # update() calls after a step the scaler skipped
        self._updates = 0

    def update(self, new_scale=None):
        found = [v for state in self._per_optimizer_states.values()
                 for v in state["found_inf_per_device"].values()]
        if any(v.item() > 0 for v in found):
            self.skipped_steps.append(self._updates)
        self._updates += 1
        super().update(new_scale)


def float16_gradients(x):
    """x, whose gradient is rounded through float16 in backward (inf past 65504)."""
    if x.requires_grad:
        x.register_hook(lambda g: g.half().float())
    return x
