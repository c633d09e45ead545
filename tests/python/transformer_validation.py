"""Validation on a character-level GPT trained on real English (the licence texts Debian's
base-files ships; examples/transformer_lm.py, audited as examples/transformer_audit.py does):
five seeds each of a healthy run, the same under bf16 autocast, an unstable one (lr 3e-2, no warm-up) and its published fix (the same with
qk-LayerNorm), each twice: with the attention written out (the logits handed to the audit) and
the nanoGPT way, through scaled_dot_product_attention (q and k handed to the audit; ``_sdpa``).
The truth is computed from the model's own q and k in plain PyTorch (transformer_lm.truth_stats),
not by gradscope. Its own ctest entry (python.transformer_validation): about three minutes;
docs/attention.md has the tables."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from transformer_audit import audited as audited_run  # noqa: E402

SEEDS = range(5)
ATTENTION_FLAGS = {"ATTENTION_LOGIT_GROWTH", "ATTENTION_ENTROPY_COLLAPSE"}


def audited(name, seed):
    """(truth, report): the truth adds the entropy fraction per block and head, from plain
    PyTorch at every step."""
    return audited_run(name, seed, truth_fractions=True)


def first(series, crossed):
    return next((step for step, value in enumerate(series) if crossed(value)), None)


def truth_steps(truth):
    """First step any head's largest logit > 100; first step a head's entropy fraction < 0.1
    (the rule's floor); first step the lowest head's entropy < 0.1 nats."""
    largest = [max(max(heads) for heads in step) for step in truth["max_logit"]]
    flattest = [min(min(heads) for heads in step) for step in truth["entropy_fraction"]]
    lowest = [min(min(heads) for heads in step) for step in truth["entropy"]]
    return (first(largest, lambda v: v > 100), first(flattest, lambda v: v < 0.1),
            first(lowest, lambda v: v < 0.1))


def attention_since(report):
    """{flag: (first step, node)} of the earliest attention finding of each kind."""
    out = {}
    for node in report.nodes:
        for e in node.evidence:
            if e.flag in ATTENTION_FLAGS and (e.flag not in out or e.first_step < out[e.flag][0]):
                out[e.flag] = (e.first_step, node.node)
    return out


ROWS = []


ATTENTION = ["", "_sdpa"]  # the logits written out; scaled_dot_product_attention


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["healthy", "bf16", "qknorm"])
@pytest.mark.parametrize("attention", ATTENTION)
def test_healthy_and_fixed_runs_are_quiet(attention, name, seed):
    name += attention
    truth, report = audited(name, seed)
    steps = truth_steps(truth)
    ROWS.append((name, seed, steps, {}, report.verdict().replace("verdict: ", "")))
    assert steps == (None, None, None), (name, seed, steps)  # the truth: no instability
    flags = report.flags()
    assert not any(ATTENTION_FLAGS & set(f) or "SATURATED" in f for f in flags.values()), flags
    if not name.startswith("qknorm"):
        assert report.flagged() == [], report.table()
    # The fix still trains at lr 3e-2 without warm-up: what else it shows is in the table
    # (docs/attention.md), not an attention finding.


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("attention", ATTENTION)
def test_the_unstable_run_is_named_on_its_attention_within_20_steps_of_the_truth(attention, seed):
    truth, report = audited("unstable" + attention, seed)
    big, flat, _ = steps = truth_steps(truth)
    found = attention_since(report)
    ROWS.append(("unstable" + attention, seed, steps, found, report.verdict().replace("verdict: ", "")))
    assert big is not None and flat is not None, (seed, steps)
    assert found, report.table()
    assert all(node.startswith("blocks.") and node.endswith(".attn") for _, node in found.values()), found
    # gradscope measures every 10th step and needs three samples in a row: it can only follow
    # the truth, by less than 20 steps.
    assert 0 <= found["ATTENTION_LOGIT_GROWTH"][0] - big <= 20, (found, steps)
    if "ATTENTION_ENTROPY_COLLAPSE" in found:
        assert 0 <= found["ATTENTION_ENTROPY_COLLAPSE"][0] - flat <= 20, (found, steps)
    flags = report.flags()
    assert not any("SATURATED" in f for f in flags.values()), flags


def test_print_the_table():
    """The rows of docs/attention.md's table (pytest -s shows them)."""
    print("\n| run | seed | truth: logit > 100 | truth: entropy fraction < 0.1 | truth: entropy < 0.1 nats | gradscope | verdict |")
    for name, seed, (big, flat, nats), found, verdict in ROWS:
        said = "; ".join(f"{k} since {s} on {n}" for k, (s, n) in sorted(found.items())) or "-"
        cells = [name, seed] + ["-" if v is None else v for v in (big, flat, nats)] + [said, verdict]
        print("| " + " | ".join(str(c) for c in cells) + " |")
