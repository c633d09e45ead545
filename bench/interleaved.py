"""The harness of the Python step benchmarks (bench-loss, bench-transformer): arms that train the
same model and optimizer, stepped in interleaved cycles in one process, compared by the median of
per-cycle paired ratios (each cycle steps every arm once, in alternating order, so drift in the
machine's speed hits both sides of a ratio alike)."""
import statistics
import time


class Arm:
    """One way of stepping: `open()` returns the per-arm context (an audit, or None), `step(ctx, i)`
    trains one step, `close(ctx)` ends it. `times` holds the mean step time of each cycle."""

    def __init__(self, name):
        self.name = name
        self.times = []

    def open(self):
        return None

    def step(self, ctx, i):
        raise NotImplementedError

    def close(self, ctx):
        if ctx is not None:
            ctx.close()

    def cycle(self, n):
        ctx = self.open()
        try:
            self.step(ctx, 0)  # untimed: hooks and snapshots are set up at the first step
            start = time.perf_counter()
            for i in range(n):
                self.step(ctx, i)
            self.times.append((time.perf_counter() - start) / n)
        finally:
            self.close(ctx)


def run_interleaved(arms, cycles, steps, warmup_steps=3):
    """One warm-up cycle per arm (not kept), then `cycles` cycles of `steps` steps per arm, the
    order reversed every other cycle. Returns {name: arm}."""
    for arm in arms:
        arm.cycle(warmup_steps)
        arm.times.clear()
    for c in range(cycles):
        for arm in (arms if c % 2 == 0 else arms[::-1]):
            arm.cycle(steps)
    return {a.name: a for a in arms}


def paired_median(num, den):
    """The median over cycles of num's step time / den's."""
    return statistics.median(a / b for a, b in zip(num.times, den.times))
