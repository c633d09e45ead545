"""The loss series through audit.step(opt, loss=...), record_loss, record_grad_norm and
clip_grad_norm_: the norms against torch's own, a planted spike found at its step with its batch,
a saved run that reads back the same, and bad input."""
import math

import pytest
import torch
from torch import nn

import gradscope


def model_and_data(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    x = torch.randn(64, 8)
    return model, x, x.sum(1, keepdim=True)


def test_clip_grad_norm_records_torchs_norm_before_and_after_and_the_spike(tmp_path):
    model, x, y = model_and_data()
    twin, _, _ = model_and_data()  # the same weights, clipped by torch alone: the truth
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_twin = torch.optim.SGD(twin.parameters(), lr=0.05)
    truth = []
    with gradscope.Audit(model, run=str(tmp_path / "run")) as audit:
        for step in range(60):
            target = y * 100 if step == 40 else y
            for m, o in ((model, opt), (twin, opt_twin)):
                o.zero_grad()
                nn.functional.mse_loss(m(x), target).backward()
            truth.append(float(torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)))
            opt_twin.step()
            loss = nn.functional.mse_loss(model(x), target)
            returned = audit.clip_grad_norm_(1.0)
            assert float(returned) == pytest.approx(truth[-1], rel=1e-6)
            audit.step(opt, loss=loss, batch=1000 + step)
    s = audit.report().series
    assert s.loss_steps == 60 and s.grad_norm_steps == 60
    assert s.spike_count == 1 and s.spikes[0].step == 40 and s.spikes[0].batch == 1040
    assert s.grad_norm_max == pytest.approx(max(truth), rel=1e-6)
    assert s.clipped_steps == sum(1 for n in truth if n > 1.0 * (1 + 1e-6))
    assert not s.diverged()
    saved = gradscope.load_run(str(tmp_path / "run")).report.series
    assert saved.spike_count == 1 and saved.spikes[0].z == s.spikes[0].z and saved.grad_norm_median == s.grad_norm_median


def test_a_nan_loss_is_a_divergence_and_grad_norm_takes_what_torch_returned():
    model, x, y = model_and_data(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with gradscope.Audit(model) as audit:
        for step in range(30):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            total = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            audit.step(opt, loss=math.nan if step >= 20 else loss.item(), grad_norm=total)
    s = audit.report().series
    assert s.diverged() and s.divergence_step == 20 and s.divergence_nonfinite
    assert s.grad_norm_steps == 30 and s.clip_known_steps == 0
    assert audit.report().verdict().startswith("verdict: unhealthy: DIVERGENCE at step 20")


def test_bad_input_is_refused_with_its_name():
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with gradscope.Audit(model) as audit:
        nn.functional.mse_loss(model(x), y).backward()
        with pytest.raises(gradscope.Error, match="loss must be a number or a one-element tensor"):
            audit.record_loss(torch.ones(3))
        with pytest.raises(gradscope.Error, match="loss must be a number"):
            audit.record_loss("0.5")
        with pytest.raises(gradscope.Error, match="batch must be an integer"):
            audit.record_loss(0.5, batch=1.5)
        with pytest.raises(gradscope.Error, match="max_norm must be a finite number > 0"):
            audit.clip_grad_norm_(0)
        with pytest.raises(gradscope.Error, match="batch is given without a loss"):
            audit.step(opt, batch=3)
        audit.step(opt, loss=torch.tensor(0.5))
    assert audit.report().series.loss_steps == 1


def test_a_refused_step_keeps_nothing_and_its_retry_counts(tmp_path):
    """step(opt, loss=5.0, batch=10**400) once raised OverflowError after the loss was kept, and
    the retry's loss of the same step was then ignored: every argument is checked first."""
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with gradscope.Audit(model, run=str(tmp_path / "run")) as audit:
        nn.functional.mse_loss(model(x), y).backward()
        with pytest.raises(gradscope.Error, match=r"step: batch must be an integer index from 0 to 2\*\*53, got an "
                                                  r"integer of 1329 bits"):
            audit.step(opt, loss=5.0, batch=10 ** 400)
        with pytest.raises(gradscope.Error, match="batch must be an integer index from 0 to 2"):
            audit.step(opt, loss=5.0, batch=-1)
        with pytest.raises(gradscope.Error, match="loss must be a number within float's range"):
            audit.step(opt, loss=10 ** 400)
        with pytest.raises(gradscope.Error, match="grad_norm must be a real number"):
            audit.step(opt, loss=5.0, grad_norm=torch.tensor(1 + 2j))
        with pytest.raises(gradscope.Error, match="batch must be an integer index"):
            audit.record_loss(5.0, batch=2 ** 53 + 1)
        audit.step(opt, loss=7.0, batch=2 ** 53)
    for s in (audit.report().series, gradscope.load_run(str(tmp_path / "run")).report.series):
        assert s.loss_steps == 1 and s.first_loss == 7.0 and s.grad_norm_steps == 0


def test_a_bool_loss_is_refused_not_kept_as_one():
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with gradscope.Audit(model) as audit:
        nn.functional.mse_loss(model(x), y).backward()
        for bad in (torch.tensor(True), torch.tensor([False])):
            with pytest.raises(gradscope.Error, match="loss must be a real number, got a torch.bool tensor"):
                audit.step(opt, loss=bad)
            with pytest.raises(gradscope.Error, match="loss must be a real number"):
                audit.record_loss(bad)
        with pytest.raises(gradscope.Error, match="loss must be a number or a one-element tensor, got bool"):
            audit.step(opt, loss=True)
        audit.step(opt)
    assert audit.report().series.loss_steps == 0


def test_a_loss_beyond_float32_is_named_and_leaves_the_band_alone(tmp_path):
    """A loss of -1e200 in a flat series once made the band's sd 0 and every later loss a
    LOSS_SPIKE; it is LOSS_OUT_OF_RANGE, and the losses around it are judged as they are."""
    model, x, y = model_and_data(2)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # weights fixed: the planted losses alone
    g = torch.Generator().manual_seed(3)
    with gradscope.Audit(model, run=str(tmp_path / "run")) as audit:
        for step in range(80):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            loss = -1e200 if step == 30 else 2.0 + 0.01 * float(torch.randn(1, generator=g))
            audit.step(opt, loss=loss)
    for report in (audit.report(), gradscope.load_run(str(tmp_path / "run")).report):
        s = report.series
        assert s.spike_count == 0 and not s.diverged()
        assert s.out_of_range_losses == 1 and s.first_out_of_range_step == 30 and s.first_out_of_range_loss == -1e200
        assert report.verdict().startswith("verdict: unhealthy: LOSS_OUT_OF_RANGE at step 30 (loss -1e+200)")
