"""Hook hygiene: nothing of the audit stays on the model, and training is bit-identical."""
import pytest
import torch

import gradscope
from models import batches, hooks_left, mlp, train


def test_no_hook_left_after_the_with_block():
    model = mlp()
    with gradscope.Audit(model) as audit:
        assert audit.hooks > 0 and hooks_left(model)
        train(model, batches(3), audit)
    assert audit.hooks == 0
    assert hooks_left(model) == []
    n = len(audit.records())
    train(model, batches(2))  # the model trains on, unobserved
    assert len(audit.records()) == n
    assert audit.report().steps == 3  # the findings outlive the block


def test_no_hook_left_after_an_exception_in_the_block():
    model = mlp()
    with pytest.raises(ZeroDivisionError):
        with gradscope.Audit(model) as audit:
            train(model, batches(2), audit)
            1 / 0
    assert hooks_left(model) == []
    assert audit.hooks == 0


def test_no_hook_left_when_the_forward_fails_inside_the_block():
    model = mlp()
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied|size mismatch|mat1 and mat2"):
        with gradscope.Audit(model):
            model(torch.randn(4, 5))  # wrong input width
    assert hooks_left(model) == []


def test_training_is_bit_identical_with_and_without_the_audit():
    data = batches(15)
    plain = train(mlp(), data)
    audited = mlp()
    with gradscope.Audit(audited) as audit:
        train(audited, data, audit)
    after = mlp()
    with gradscope.Audit(after, sample_every=3) as audit:
        train(after, data, audit, after_step=True)
    for (name, p), q, r in zip(plain.named_parameters(), audited.parameters(), after.parameters()):
        assert torch.equal(p, q), name
        assert torch.equal(p, r), name


def test_a_closed_audit_refuses_new_steps():
    model = mlp()
    with gradscope.Audit(model) as audit:
        train(model, batches(1), audit)
    with pytest.raises(gradscope.Error, match="closed"):
        audit.step(lambda: None)
