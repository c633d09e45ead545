"""Validation of the loss rules (LOSS_SPIKE, DIVERGENCE, GRADIENT_SPIKE; docs/spikes.md) on a
transformer at a high learning rate: the character-level GPT of examples/transformer_lm.py on the
licence texts Debian's base-files ships, audited as examples/transformer_audit.py does (every
block's attention and MLP and the head, the attention logits handed over), with the loss and the
global gradient norm before clipping recorded at every step. Five seeds each of:

- spiky: the healthy run (lr 1e-3, warm-up 50, clip 1.0) to step 200, then at unstable's lr 3e-2
  (30x): the loss jumps at the first step after the raise and stays above its level for tens of
  steps;
- healthy for the same 240 steps: the control, the same run without the raise;
- spiky_warmup: 3 blocks at init_std 0.003 warmed up to lr 1e-2 without clipping; the loss
  doubles for one step as it leaves its unigram plateau (steps 16-19) on the seeds where it does.

The truth is the plain per-step losses and gradient norms that transformer_lm.train computes
itself, and each audited node's gradient L2 computed here, not gradscope's.
OLMo-core's spike rule and Megatron-LM's spiky-loss check (spike_validation.py) run on the same
losses. About a minute on one core."""
import functools
import math
import os
import sys

import pytest
import torch

import gradscope

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
sys.path.insert(0, HERE)
import transformer_lm as lm  # noqa: E402
from transformer_audit import audit_nodes  # noqa: E402
from spike_validation import megatron_spikes, olmo_spikes  # noqa: E402  (the two rules written out)

SEEDS = range(5)
RAISE = lm.CONFIGS["spiky"]["lr_raise"][0]   # 200: the first update at lr 3e-2
STEPS = lm.CONFIGS["spiky"]["steps"]          # 240, the control's too
ROWS = []  # (run, seed, truth, gradscope, olmo, megatron) for the table


@functools.lru_cache(maxsize=None)
def audited(name, seed, steps=None):
    """(truth, report): transformer_lm.train's run with the audit as transformer_audit.py attaches
    it, plus the loss (record_loss) and the global norm before and after clipping
    (record_grad_norm) at every step. truth["node_grad_norm"][module] is each audited node's and
    its submodules' gradient L2 at every step as optimizer.step saw it (after clipping), computed
    here."""
    held = {"norms": {}}

    def attach(model):
        audit = gradscope.Audit(model, nodes=audit_nodes(model))
        for block in model.blocks:
            block.attn.on_logits = lambda module, logits, mask: audit.attention(module, logits, mask)
        held["audit"] = audit
        # The audited nodes and their submodules (the report's "node/child" rows).
        held["measured"] = [f"{node}.{child}" if child else node for node in audit_nodes(model)
                            for child, m in [("", None)] + list(model.get_submodule(node).named_children())
                            if m is None or any(True for _ in m.parameters())]

    def on_grad_norm(step, before, after):
        held["audit"].record_grad_norm(before, after)

    def on_step(step, model, loss):
        held["audit"].record_loss(loss.item())
        for name in held["measured"]:
            params = [p for p in model.get_submodule(name).parameters() if p.grad is not None]
            held["norms"].setdefault(name, []).append(
                math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params)))
        held["audit"].after_step()

    torch.set_num_threads(1)
    truth = lm.train(name, seed, steps=steps, model_hook=attach, on_step=on_step, on_grad_norm=on_grad_norm)
    held["audit"].close()
    truth["node_grad_norm"] = held["norms"]
    return truth, held["audit"].report()


def truth_spike(loss, min_history=16):
    """First step (with at least min_history losses before it) whose loss is non-finite or above
    1.5x the lowest loss before it: the loss rose sharply above where it had been."""
    lowest = math.inf
    for i, v in enumerate(loss):
        if i >= min_history and (not math.isfinite(v) or v > 1.5 * lowest):
            return i
        if math.isfinite(v):
            lowest = min(lowest, v)
    return None


def first_burst(g, factor=10.0, min_history=2, window=128):
    """First step whose value is above factor x the largest of its last `window` values."""
    return next((i for i in range(min_history, len(g)) if g[i] > factor * max(g[max(0, i - window):i])), None)


def band(loss, step, window=128):
    past = loss[max(0, step - window):step]
    mean = sum(past) / len(past)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in past) / len(past))


def check_gradient_spikes(truth, report):
    """Every node's GRADIENT_SPIKE is the truth's: flagged exactly where its gradient L2 (as the
    optimizer saw it) first went above 10x the largest of its last 128 steps, with that ratio.
    Returns {node: first step} of the nodes flagged."""
    flagged = {}
    for node in report.nodes:
        direct = [e for e in node.evidence if e.flag == "GRADIENT_SPIKE" and e.measure.startswith("gradient L2")]
        g = truth["node_grad_norm"][node.node.replace("/", ".")]
        burst = first_burst(g)
        if burst is None:
            assert direct == [], (node.node, [str(e) for e in direct])
            continue
        assert len(direct) == 1 and direct[0].first_step == burst, (node.node, burst, [str(e) for e in direct])
        assert direct[0].value == pytest.approx(g[burst] / max(g[max(0, burst - 128):burst]), rel=1e-4)
        flagged[node.node] = burst
    return flagged


def gradscope_onset(s):
    """gradscope's first finding on the loss: the divergence's onset or the first LOSS_SPIKE."""
    steps = ([s.divergence_step] if s.diverged() else []) + [p.step for p in s.spikes]
    return min(steps) if steps else None


@pytest.mark.parametrize("seed", SEEDS)
def test_the_raised_learning_rate_is_found_at_the_spike(seed):
    truth, report = audited("spiky", seed)
    loss, norm = truth["loss"], truth["global_grad_norm"]
    spike = truth_spike(loss)
    olmo, megatron = olmo_spikes(loss), megatron_spikes(loss)
    # The truth: nothing before the raise; the loss jumps within 2 steps of it (the first loss
    # after the raised update is at RAISE + 1), 6 sd above its band by OLMo-core's rule.
    assert spike is not None and 0 < spike - RAISE <= 2, spike
    assert olmo and olmo[0] == RAISE + 1, olmo
    assert megatron == []  # 10x the early maximum (4.5, the uniform loss) is out of reach
    s = report.series
    onset = gradscope_onset(s)
    assert onset is not None, report.table()
    assert 0 <= spike - onset <= 5, (onset, spike)  # never after the truth
    assert onset == olmo[0]
    # The loss rises above the highest of the 128 before it and stays there: a divergence, and the
    # spike at its onset is the divergence (rules.h), not a LOSS_SPIKE apart.
    level = max(loss[onset - 128:onset])
    assert s.diverged() and s.divergence_step == onset
    assert all(v > level for v in loss[onset:onset + 10])
    assert s.divergence_level == pytest.approx(level, rel=1e-6)
    assert s.divergence_value == pytest.approx(loss[onset], rel=1e-6)
    back = next((i for i in range(onset + 1, len(loss)) if not loss[i] > level), -1)
    assert s.divergence_back == back
    assert s.spike_count == 0 and len(s.spikes) == 0
    assert report.verdict().startswith(f"verdict: unhealthy: DIVERGENCE at step {onset}"), report.verdict()
    # The run clips already (clip 1.0): the advice is the learning rate, with the clipping count
    # the truth gives, not a clipping value.
    clipped = sum(1 for g in truth["global_grad_norm"] if g > 1.0 * (1 + 1e-6))
    assert f"lower the learning rate: clipping already acted at {clipped} of {STEPS} steps" in report.table(), \
        report.table()
    # No node's gradient burst (each block's before clipping stays under 10x its recent largest,
    # from the truth): no lead is named.
    for b in range(len(truth["grad_norm"][0])):
        assert first_burst([g[b] for g in truth["grad_norm"]]) is None
    assert check_gradient_spikes(truth, report) == {}
    assert list(s.leads) == []
    # The norms before clipping and the clipping count are the truth's.
    ordered = sorted(norm)
    assert s.grad_norm_max == pytest.approx(ordered[-1], rel=1e-6)
    assert s.grad_norm_max_step == norm.index(ordered[-1])
    assert s.grad_norm_median == pytest.approx(ordered[(len(ordered) + 1) // 2 - 1], rel=1e-6)
    assert s.clipped_steps == sum(1 for g in norm if g > 1.0 * (1 + 1e-6))
    assert s.loss_steps == STEPS and s.grad_norm_steps == STEPS
    ROWS.append(("spiky", seed, f"loss {loss[RAISE]:.2f} -> {loss[spike]:.2f} at step {spike}",
                 f"DIVERGENCE at {s.divergence_step} (above {level:.2f} until "
                 + (f"{s.divergence_back})" if s.divergence_back >= 0 else "the end)"),
                 olmo[:3], megatron))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_control_is_healthy(seed):
    truth, report = audited("healthy", seed, steps=STEPS)
    loss = truth["loss"]
    olmo, megatron = olmo_spikes(loss), megatron_spikes(loss)
    assert truth_spike(loss) is None and olmo == [] and megatron == []
    s = report.series
    assert s.spike_count == 0 and not s.diverged(), report.table()
    assert check_gradient_spikes(truth, report) == {}
    assert report.healthy(), report.table()
    assert s.loss_steps == STEPS
    ROWS.append(("healthy (control)", seed, "no spike", "healthy", olmo, megatron))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_warmup_spike_is_a_loss_spike_at_its_step_with_the_nodes_that_burst(seed):
    truth, report = audited("spiky_warmup", seed)
    loss = truth["loss"]
    spike = truth_spike(loss)
    olmo, megatron = olmo_spikes(loss), megatron_spikes(loss)
    s = report.series
    assert megatron == [] and not s.diverged()
    bursts = check_gradient_spikes(truth, report)
    if spike is None:
        # No spike on this seed: none found by any rule.
        assert olmo == [] and s.spike_count == 0, [(p.step, p.z) for p in s.spikes]
        # (A gradient may still burst without moving the loss: flagged where the truth has it.)
        ROWS.append(("spiky_warmup", seed, "no spike", "no LOSS_SPIKE" + "".join(
            f"; GRADIENT_SPIKE {n}@{b}" for n, b in sorted(bursts.items(), key=lambda x: x[1])), olmo, megatron))
        return
    assert s.spike_count >= 1, report.table()
    first = s.spikes[0]
    assert 0 <= spike - first.step <= 5, (first.step, spike)
    assert olmo and first.step == olmo[0]
    # Its band is the losses before it, computed here.
    mean, sd = band(loss, first.step)
    assert first.band_mean == pytest.approx(mean, rel=1e-5)
    assert first.z == pytest.approx((loss[first.step] - mean) / sd, rel=1e-4)
    assert report.verdict().startswith(f"verdict: unhealthy: LOSS_SPIKE at step {first.step}"), report.verdict()
    # The leads are nodes whose gradient really burst 10x past its recent largest, at the step
    # named, up to 10 steps before the spike, earliest first.
    # (A burst after the spike, its effect, is no lead.)
    assert {l.node: l.step for l in s.leads} == {n: b for n, b in bursts.items() if 0 <= first.step - b <= 10}
    assert [l.step for l in s.leads] == sorted(l.step for l in s.leads)
    ROWS.append(("spiky_warmup", seed, f"loss {loss[spike - 1]:.2f} -> {loss[spike]:.2f} at step {spike}",
                 f"LOSS_SPIKE at {first.step} (z {first.z:.1f}); first "
                 + (", ".join(f"{l.node}@{l.step}" for l in s.leads) or "-"), olmo[:3], megatron))


def test_the_warmup_spike_happens_on_most_seeds():
    """The configuration spikes (seeds 1-4 of 0-4 on torch 1.13; docs/spikes.md has the seeds on the pinned torch): at least 3.
    The runs are the test above's (cached)."""
    spiked = [seed for seed in SEEDS if truth_spike(audited("spiky_warmup", seed)[0]["loss"]) is not None]
    assert len(spiked) >= 3, spiked


def test_print_the_table():
    """The rows of the table (pytest -s shows them)."""
    print("\n| run | seed | truth | gradscope | OLMo-core 6 sigma / 128 | Megatron 10x early max |")
    for run, seed, truth, found, olmo, megatron in ROWS:
        print(f"| {run} | {seed} | {truth} | {found} | {olmo or '-'} | {megatron or '-'} |")
