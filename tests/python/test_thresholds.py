"""Every threshold of the one table in core (audit/thresholds.h) is a Python attribute, in the
thresholds' JSON and in the audit's report.json, with the value set from Python."""
import json

import pytest

import gradscope
from models import batches, mlp, train


def attributes(t):
    return sorted(a for a in dir(t) if not a.startswith("_") and not callable(getattr(t, a)))


def test_every_threshold_is_an_attribute_and_in_the_json():
    t = gradscope.Thresholds()
    names = list(json.loads(t.to_json()).keys())
    assert len(names) >= 22
    assert attributes(t) == sorted(names)


def test_a_value_set_from_python_reaches_report_json():
    t = gradscope.Thresholds()
    t.grad_hi = 123.5
    t.stagnant_steps = 17
    model = mlp()
    audit = gradscope.Audit(model, thresholds=t)
    train(model, batches(3), audit)
    saved = json.loads(audit.report().to_json())["gradscope_report"]["thresholds"]
    assert sorted(saved.keys()) == attributes(t)
    assert saved["grad_hi"] == 123.5
    assert saved["stagnant_steps"] == 17


def test_an_integer_threshold_refuses_a_fraction():
    t = gradscope.Thresholds()
    with pytest.raises(TypeError):
        t.stagnant_steps = 2.5
