"""Validation of the loss rules (LOSS_SPIKE, DIVERGENCE, GRADIENT_SPIKE; docs/spikes.md) on a
word-level LSTM language model trained on real English (the licence texts Debian's base-files
ships; examples/lstm_lm.py, audited as examples/lstm_audit.py does), five seeds each of:
PyTorch's word-language-model recipe without its clipping (SGD lr 20: it blows up), the recipe
as shipped (clip 0.25), and the recipe with one corrupted batch at step 250 (its targets
replaced by random ids). The truth is the plain per-step losses and gradient norms that
lstm_lm.train computes itself, not gradscope's. OLMo-core's spike rule and Megatron-LM's
spiky-loss check are written out here and run on the same losses, for the comparison in
docs/validation.md. Its own ctest entry (python.spike_validation): about two minutes."""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from lstm_audit import audited, batches_per_epoch  # noqa: E402
import lstm_lm as lm  # noqa: E402

SEEDS = range(5)
PLANT = 250
ROWS = []  # (run, seed, truth, gradscope, olmo, megatron) for the table


def truth_blowup(loss):
    """First step whose loss is non-finite or above 1.5x the first loss: the blow-up."""
    return next((i for i, v in enumerate(loss) if not math.isfinite(v) or v > 1.5 * loss[0]), None)


def olmo_spikes(values, window=128, sigma=6.0, min_history=16):
    """OLMo-core's stability monitor, written out: a value above the mean + sigma x std of the
    last `window` values (we wait for min_history of them, as gradscope does)."""
    out = []
    for i, v in enumerate(values):
        past = [x for x in values[max(0, i - window):i] if math.isfinite(x)]
        if len(past) < min_history:
            continue
        mean = sum(past) / len(past)
        sd = math.sqrt(sum((x - mean) ** 2 for x in past) / len(past))
        if v > mean + sigma * sd:
            out.append(i)
    return out


def megatron_spikes(values, factor=10.0, early=100):
    """Megatron-LM's spiky-loss check, written out: a loss >= factor x the largest of the first
    `early` losses."""
    out = []
    for i, v in enumerate(values):
        first = [x for x in values[:min(i, early)] if math.isfinite(x)]
        if first and max(first) > 0 and v >= factor * max(first):
            out.append(i)
    return out


def first_burst(truth, node, factor=10.0, min_history=2):
    """First step whose gradient L2 of `node` (before clipping) is above factor x the largest of
    its earlier steps."""
    g = truth["node_grad_norm"][node]
    return next((i for i in range(min_history, len(g)) if g[i] > factor * max(g[:i])), None)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_blowup_is_a_divergence_named_within_5_steps_with_the_nodes_that_burst_first(seed):
    truth, report = audited("blowup", seed, steps=40)
    blowup = truth_blowup(truth["loss"])
    assert blowup is not None, "the unclipped recipe did not blow up: the example changed"
    s = report.series
    assert s.diverged(), report.table()
    assert 0 <= blowup - s.divergence_step <= 5, (s.divergence_step, blowup)  # never after the truth
    # The leads are nodes whose gradient really burst 10x past its earlier largest, at the step
    # gradscope names, and no later than the divergence.
    assert len(s.leads) >= 1
    for lead in s.leads:
        assert first_burst(truth, lead.node) == lead.step, (lead.node, lead.step)
        assert lead.step <= s.divergence_step
    # The headline is the divergence with its lead, and the advice clips with measured norms.
    verdict = report.verdict()
    assert verdict.startswith(f"verdict: unhealthy: DIVERGENCE at step {s.divergence_step}"), verdict
    # At the divergence's own step the bursts are not said to come first (they share its cause).
    burst = "gradients burst first in" if s.leads[0].lead > 0 else "gradients burst at the same step in"
    assert f"{burst} {s.leads[0].node}" in verdict, verdict
    saved = report.to_dict()["gradscope_report"]["series"]
    assert saved["divergence_step"] == s.divergence_step and saved["leads"][0]["node"] == s.leads[0].node
    g = sorted(truth["grad_norm"])
    assert s.grad_norm_max == pytest.approx(g[-1], rel=1e-5)
    assert s.grad_norm_median == pytest.approx(g[(len(g) + 1) // 2 - 1], rel=1e-5)
    # The comparison of docs/spikes.md: OLMo-core's and Megatron-LM's rules miss the blow-up.
    assert olmo_spikes(truth["loss"]) == [] and megatron_spikes(truth["loss"]) == []
    ROWS.append(("blowup", seed, f"blow-up at step {blowup}",
                 f"DIVERGENCE since {s.divergence_step}; first " + ", ".join(f"{l.node}@{l.step}" for l in s.leads),
                 olmo_spikes(truth["loss"])[:1], megatron_spikes(truth["loss"])[:1]))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_clipped_recipe_is_healthy(seed):
    truth, report = audited("clipped", seed, steps=300)
    assert truth_blowup(truth["loss"]) is None
    s = report.series
    assert report.healthy(), report.table()
    assert s.spike_count == 0 and not s.diverged()
    assert s.loss_steps == 300 and s.grad_norm_steps == 300
    # Clipping acted where the norm before it was above 0.25, counted from the truth.
    assert s.clipped_steps == sum(1 for g in truth["grad_norm"] if g > 0.25 * (1 + 1e-6))
    assert olmo_spikes(truth["loss"]) == [] and megatron_spikes(truth["loss"]) == []  # no false alarm either
    ROWS.append(("clipped", seed, "no blow-up, no fault", "healthy", olmo_spikes(truth["loss"]),
                 megatron_spikes(truth["loss"])))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_corrupted_batch_is_a_loss_spike_at_its_step_naming_its_batch_and_nothing_else(seed):
    truth, report = audited("clipped", seed, steps=300, corrupt_step=PLANT, corrupt="random")
    s = report.series
    assert s.spike_count == 1, [(p.step, p.z) for p in s.spikes]
    assert s.spikes[0].step == PLANT
    assert s.spikes[0].batch == PLANT % batches_per_epoch(lm.CONFIGS["clipped"]) == truth["batch_index"][PLANT]
    assert not s.diverged()
    assert all(f == ["HEALTHY"] for f in report.flags().values()), report.flags()
    # The band is the 128 losses before it, computed here.
    past = truth["loss"][PLANT - 128:PLANT]
    mean = sum(past) / 128
    sd = math.sqrt(sum((x - mean) ** 2 for x in past) / 128)
    assert s.spikes[0].band_mean == pytest.approx(mean, rel=1e-5)
    assert s.spikes[0].z == pytest.approx((truth["loss"][PLANT] - mean) / sd, rel=1e-4)
    assert report.verdict().startswith(f"verdict: unhealthy: LOSS_SPIKE at step {PLANT}")
    assert olmo_spikes(truth["loss"]) == [PLANT] and megatron_spikes(truth["loss"]) == []
    ROWS.append(("corrupted batch", seed, f"fault at step {PLANT}", f"LOSS_SPIKE at {s.spikes[0].step} "
                 f"(batch {s.spikes[0].batch}, z {s.spikes[0].z:.1f})", olmo_spikes(truth["loss"]),
                 megatron_spikes(truth["loss"])))


def test_print_the_table():
    """The rows of docs/validation.md's table (pytest -s shows them)."""
    print("\n| run | seed | truth | gradscope | OLMo-core 6 sigma / 128 | Megatron 10x early max |")
    for run, seed, truth, found, olmo, megatron in ROWS:
        print(f"| {run} | {seed} | {truth} | {found} | {olmo or '-'} | {megatron or '-'} |")
