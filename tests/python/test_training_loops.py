"""The audit in the training loops people write: evaluation passes, pauses, activation
checkpointing in both modes, mixed-precision loss scaling (GradScaler's own step logic on the
CPU, with float16 overflow), an optimizer of another model. Ground truth is computed here with
plain PyTorch: forward hooks, parameter snapshots, the scaler's own record of skipped steps."""
import collections
import math
import re
import subprocess

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import gradscope
from cpu_grad_scaler import CpuGradScaler, float16_gradients
from models import batches, mlp


def element_counts(records, site="activation"):
    counts = collections.Counter()
    for r in records:
        if r.site == site:
            counts[r.node] += r.stats.count
    return dict(counts)


def ground_truth_activation_counts(model, data, validate_every):
    """Elements each node's group outputs in the training forwards alone (plain hooks)."""
    counts = collections.Counter()
    groups = {"relu1": "fc1", "tanh": "fc2", "out": "out"}
    handles = [getattr(model, child).register_forward_hook(
        lambda m, i, o, node=node: counts.update({node: o.numel()}) if torch.is_grad_enabled() and m.training else None)
        for child, node in groups.items()]
    try:
        run_with_validation(model, data, None, validate_every)
    finally:
        for h in handles:
            h.remove()
    return dict(counts)


def run_with_validation(model, data, audit, validate_every, mode="no_grad"):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    val_x = torch.randn(100, 8)
    for i, (x, y) in enumerate(data):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        if audit is None:
            opt.step()
        else:
            audit.step(opt)
        if i % validate_every == 0:
            validate(model, val_x, mode, audit)
    validate(model, val_x, mode, audit)  # a last validation, still inside the with-block


def validate(model, x, mode, audit):
    if mode == "no_grad":
        with torch.no_grad():
            model(x)
    elif mode == "eval":
        model.eval()
        model(x)  # gradients on: only the mode says this is evaluation
        model.train()
    elif mode == "paused":
        with audit.paused() if audit is not None else torch.enable_grad():
            model(x)


@pytest.mark.parametrize("mode", ["no_grad", "eval", "paused"])
def test_evaluation_passes_are_not_recorded_nor_a_step(mode):
    data = batches(6)
    want = ground_truth_activation_counts(mlp(), data, validate_every=2)
    assert want == {"fc1": 6 * 32 * 16, "fc2": 6 * 32 * 16, "out": 6 * 32 * 3}
    model = mlp()
    with gradscope.Audit(model) as audit:
        run_with_validation(model, data, audit, validate_every=2, mode=mode)
    assert element_counts(audit.records()) == want
    assert audit.report().steps == 6
    assert audit.report().healthy()


def test_pauses_nest_and_a_resume_without_pause_is_an_error():
    model = mlp()
    with gradscope.Audit(model) as audit:
        with audit.paused():
            with audit.paused():
                model(torch.randn(4, 8))
            model(torch.randn(4, 8))
        assert audit.records() == []
        with pytest.raises(gradscope.Error, match="resume\\(\\) without a pause\\(\\)"):
            audit._engine.resume()


class CheckpointedNet(nn.Module):
    def __init__(self, use_reentrant):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(8, 16)
        self.block = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
        self.out = nn.Linear(16, 3)
        self.use_reentrant = use_reentrant

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.use_reentrant is None:
            h = self.block(h)
        else:
            h = checkpoint(self.block, h, use_reentrant=self.use_reentrant)
        return self.out(h)


def audited_records(model, data):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with gradscope.Audit(model) as audit:
        for x, y in data:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            audit.step(opt)
    return audit.records()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_a_checkpointed_block_is_recorded_once_with_its_gradients(use_reentrant):
    data = batches(3)
    plain = audited_records(CheckpointedNet(None), data)
    checkpointed = audited_records(CheckpointedNet(use_reentrant), data)
    # block/0: the Linear inside the block, a submodule the audit records by default (scopes).
    assert element_counts(checkpointed) == element_counts(plain) == {
        "fc1": 3 * 32 * 16, "block": 3 * 32 * 16, "block/0": 3 * 32 * 16, "out": 3 * 32 * 3}
    assert element_counts(checkpointed, "output_grad") == element_counts(plain, "output_grad")
    want = {(r.step, r.node, r.site): r.stats for r in plain}
    got = {(r.step, r.node, r.site): r.stats for r in checkpointed}
    assert got.keys() == want.keys()
    for key, s in want.items():
        assert math.isclose(got[key].sum_sq, s.sum_sq, rel_tol=1e-9, abs_tol=1e-30), key


class Fp16Mlp(nn.Module):
    """The models.mlp network with float16 gradients between its layers, as under autocast."""

    def __init__(self):
        super().__init__()
        base = mlp()
        self.fc1, self.fc2, self.out = base.fc1, base.fc2, base.out

    def forward(self, x):
        h = float16_gradients(torch.relu(self.fc1(x)))
        h = float16_gradients(torch.tanh(self.fc2(h)))
        return float16_gradients(self.out(h))


def scaled_training(data, step_form, init_scale=2.0 ** 16, scaler_given=True):
    """Trains Fp16Mlp with a CpuGradScaler; returns (audit, scaler, unscaled grads per step,
    steps whose parameters did not change)."""
    model = Fp16Mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = CpuGradScaler(init_scale=init_scale, growth_interval=1000)
    grads, unchanged = [], []
    with gradscope.Audit(model, scaler=scaler if scaler_given else None) as audit:
        for i, (x, y) in enumerate(data):
            opt.zero_grad()
            scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
            before = [p.detach().clone() for p in model.parameters()]
            scale = scaler.get_scale()
            grads.append({n: p.grad.detach().double() / scale for n, p in model.named_parameters()})
            if step_form == "optimizer":
                audit.step(opt)
            elif step_form == "function":
                audit.step(lambda: scaler.step(opt))
            elif step_form == "unscale_first":
                scaler.unscale_(opt)
                audit.step(lambda: scaler.step(opt))
            elif step_form == "after_step":
                scaler.step(opt)
                audit.after_step()
            scaler.update()
            if all(torch.equal(b, p) for b, p in zip(before, model.parameters())):
                unchanged.append(i)
    return audit, scaler, grads, unchanged


@pytest.mark.parametrize("step_form", ["optimizer", "function", "unscale_first", "after_step"])
def test_loss_scaled_gradients_are_reported_unscaled(step_form):
    audit, scaler, grads, unchanged = scaled_training(batches(4), step_form)
    assert scaler.skipped_steps == [] and unchanged == []
    for r in audit.records():
        if r.site != "param_grad":
            continue
        g = torch.cat([t.flatten() for n, t in grads[r.step].items() if n.startswith(r.node + ".")])
        assert math.isclose(r.stats.sum_sq, g.pow(2).sum().item(), rel_tol=1e-12), (r.step, r.node)
    report = audit.report()
    assert report.healthy(), report.table()
    assert report.loss_scale.steps == 4 and report.loss_scale.skipped == 0


def test_without_the_scaler_the_same_run_is_judged_on_scaled_gradients():
    # The control of the test above: the audit cannot know the scale, so it measures 65536x.
    audit, _, grads, _ = scaled_training(batches(2), "function", scaler_given=False)
    r = next(r for r in audit.records() if r.site == "param_grad" and r.node == "out")
    g = torch.cat([t.flatten() for n, t in grads[r.step].items() if n.startswith("out.")])
    assert math.isclose(math.sqrt(r.stats.sum_sq), 65536 * g.norm().item(), rel_tol=1e-9)
    assert "EXPLODING" in audit.report().node("out").flags


@pytest.mark.parametrize("step_form", ["optimizer", "function", "after_step"])
def test_steps_skipped_on_overflow_are_counted_and_not_judged_nan(step_form):
    data = batches(30)
    audit, scaler, _, unchanged = scaled_training(data, step_form, init_scale=2.0 ** 30)
    assert scaler.skipped_steps, "the planted overflow did not happen"
    assert unchanged == scaler.skipped_steps  # skipped steps changed no parameter
    report = audit.report()
    ls = report.loss_scale
    assert ls.skipped == len(scaler.skipped_steps)
    assert ls.first_skipped == scaler.skipped_steps[0] and ls.last_skipped == scaler.skipped_steps[-1]
    assert ls.first_scale == 2.0 ** 30 and ls.last_scale == scaler.get_scale()
    assert ls.verdict == "info"
    assert report.healthy(), report.table()
    assert all(n.nan == 0 and n.inf == 0 for n in report.nodes)
    assert "LOSS_SCALE_OVERFLOW informational" in report.table()
    assert f"{ls.skipped} steps skipped on loss-scale overflow" in report.verdict()


def test_a_saved_run_keeps_the_skipped_steps(tmp_path, gradscope_cli):
    model = Fp16Mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = CpuGradScaler(init_scale=2.0 ** 30)
    with gradscope.Audit(model, run=tmp_path / "amp", scaler=scaler) as audit:
        for x, y in batches(20):
            opt.zero_grad()
            scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
            audit.step(opt)
            scaler.update()
    out = subprocess.run([gradscope_cli, "report", str(tmp_path / "amp")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"informational: {len(scaler.skipped_steps)} steps of 20 skipped on overflow" in out.stdout
    assert "verdict: healthy" in out.stdout


def test_an_optimizer_of_another_model_is_an_error_before_anything_runs():
    model, other = mlp(), mlp(seed=1)
    opt_other = torch.optim.SGD(other.parameters(), lr=0.1)
    x, y = batches(1)[0]
    with gradscope.Audit(model) as audit:
        nn.functional.cross_entropy(model(x), y).backward()
        nn.functional.cross_entropy(other(x), y).backward()
        before = [p.detach().clone() for p in other.parameters()]
        with pytest.raises(gradscope.Error, match="holds none of the audited model's 6 parameters"):
            audit.step(opt_other)
        assert all(torch.equal(b, p) for b, p in zip(before, other.parameters()))
        assert audit.current_step == 0


def test_a_bad_scaler_is_an_error():
    with pytest.raises(gradscope.Error, match="scaler must be a GradScaler"):
        gradscope.Audit(mlp(), scaler="65536")
    with pytest.raises(gradscope.Error, match="finite number > 0"):
        gradscope.Audit(mlp(), scaler=0)
    # The class instead of an instance was taken and failed at the first step with a bare TypeError.
    with pytest.raises(gradscope.Error, match="a GradScaler instance, got the class CpuGradScaler itself"):
        gradscope.Audit(mlp(), scaler=CpuGradScaler)
    with pytest.raises(gradscope.Error, match="parameter_grads_unscaled is for scalers that are not torch's"):
        gradscope.Audit(mlp(), scaler=CpuGradScaler(), parameter_grads_unscaled=True)
    with pytest.raises(gradscope.Error, match="parameter_grads_unscaled is given without a scaler"):
        gradscope.Audit(mlp(), parameter_grads_unscaled=True)
    with pytest.raises(gradscope.Error, match="parameter_grads_unscaled must be True, False or None"):
        gradscope.Audit(mlp(), scaler=DuckScaler(), parameter_grads_unscaled="yes")


class DuckScaler:
    """A loss scaler that is not torch's GradScaler: get_scale(), scale(), unscale_(), step() and
    update() by hand, as some training libraries write their own."""

    def __init__(self, scale=2.0 ** 16):
        self.value = scale

    def get_scale(self):
        return self.value

    def scale(self, loss):
        return loss * self.value

    def unscale_(self, opt):
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(self.value)

    def step(self, opt):
        opt.step()

    def update(self):
        pass


def test_a_scaler_that_is_not_torchs_must_say_whether_it_unscaled():
    # Such a scaler, passed after its own unscale_, had its gradients divided by the scale a second
    # time: every node read VANISHING (gradient L2 0.0). The audit cannot see it, so it asks.
    with pytest.raises(gradscope.Error, match="scaler DuckScaler is not torch's GradScaler.*parameter_grads_unscaled=True"):
        gradscope.Audit(mlp(), scaler=DuckScaler())
    for unscales in (True, False):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = DuckScaler(2.0 ** 16)
        truth = []
        with gradscope.Audit(model, scaler=scaler, parameter_grads_unscaled=unscales) as audit:
            for x, y in batches(3):
                opt.zero_grad()
                scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
                if unscales:
                    scaler.unscale_(opt)
                grad = torch.cat([model.out.weight.grad.flatten(), model.out.bias.grad]).double()
                truth.append(grad.norm().item() / (1.0 if unscales else scaler.value))
                audit.step(opt)
        for r in audit.records():
            if r.site == "param_grad" and r.node == "out":
                assert math.isclose(math.sqrt(r.stats.sum_sq), truth[r.step], rel_tol=1e-6), (unscales, r.step)
                assert truth[r.step] > 1e-3
        assert "VANISHING" not in audit.report().table(), unscales


@pytest.mark.parametrize("bad", ["x", None, 1e308, float("nan"), -1.0, 0.0, True])
def test_a_scale_that_is_not_one_names_the_scaler_and_the_value(bad):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = DuckScaler()
    scaler.value = bad
    x, y = batches(1)[0]
    with gradscope.Audit(model, scaler=scaler, parameter_grads_unscaled=False) as audit:
        with pytest.raises(gradscope.Error, match=r"audit: scaler DuckScaler: get_scale\(\) returned " + re.escape(repr(bad))):
            nn.functional.cross_entropy(model(x), y).backward()
        opt.zero_grad()
    # set_loss_scale by hand: the same bounds, the C++ engine's own check.
    with gradscope.Audit(mlp()) as audit:
        with pytest.raises(gradscope.Error, match="at most float32's largest"):
            audit.set_loss_scale(1e308)


@pytest.mark.parametrize("registered", ["before", "after"])
def test_a_user_hook_that_replaces_an_output_is_seen_only_when_registered_before(registered):
    model = mlp()
    x, y = batches(1)[0]
    with torch.no_grad():
        group = model.relu1(model.fc1(x))  # fc1's group output, as the audit measures it
    double = lambda m, i, o: o * 2  # noqa: E731
    if registered == "before":
        model.relu1.register_forward_hook(double)
    with gradscope.Audit(model) as audit:
        if registered == "after":
            model.relu1.register_forward_hook(double)
        nn.functional.cross_entropy(model(x), y).backward()
        audit.step(torch.optim.SGD(model.parameters(), lr=0.0))
    act = next(r.stats for r in audit.records() if r.node == "fc1" and r.site == "activation")
    want = group * 2 if registered == "before" else group
    assert math.isclose(act.sum, want.double().sum().item(), rel_tol=1e-12)


def _layers(kind):
    """fc1 -> act1 -> fc2 -> act2 -> out, with one planted fault: "dead" (fc2's bias -10
    before a ReLU), "saturated" (fc1 scaled 300x before a tanh) or "healthy"."""
    torch.manual_seed(7)
    fc1, fc2, out = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 3)
    act1, act2 = (nn.Tanh(), nn.ReLU()) if kind == "saturated" else (nn.ReLU(), nn.ReLU())
    with torch.no_grad():
        if kind == "dead":
            fc2.bias.fill_(-10.0)
        if kind == "saturated":
            fc1.weight.mul_(300.0)
    return collections.OrderedDict([("fc1", fc1), ("act1", act1), ("fc2", fc2), ("act2", act2), ("out", out)])


class _Wrapped(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.net = nn.Sequential(layers)

    def forward(self, x):
        return self.net(x)


class _Nested(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.block1 = nn.Sequential(collections.OrderedDict((k, layers[k]) for k in ("fc1", "act1")))
        self.block2 = nn.Sequential(collections.OrderedDict((k, layers[k]) for k in ("fc2", "act2")))
        self.out = layers["out"]

    def forward(self, x):
        return self.out(self.block2(self.block1(x)))


class _Listed(nn.Module):
    """The layers in an nn.ModuleList, run in a loop (as transformer blocks are)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers.values())

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


_LAYER_IDS = {"flat": {"fc1": "fc1", "fc2": "fc2", "out": "out"},
              "listed": {"fc1": "layers/0", "fc2": "layers/2", "out": "layers/4"},
              "wrapped": {"fc1": "net/fc1", "fc2": "net/fc2", "out": "net/out"},
              "nested": {"fc1": "block1/fc1", "fc2": "block2/fc2", "out": "out"}}


def _layer_flags(kind, nesting):
    layers = _layers(kind)
    model = {"flat": lambda: nn.Sequential(layers), "wrapped": lambda: _Wrapped(layers),
             "nested": lambda: _Nested(layers), "listed": lambda: _Listed(layers)}[nesting]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(256, 16, generator=g), torch.randint(0, 3, (256,), generator=g)
    with gradscope.Audit(model) as audit:
        for step in range(30):
            rows = torch.randint(0, 256, (64,), generator=g)
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[rows]), y[rows]).backward()
            audit.step(opt)
    flags = audit.report().flags()
    _layer_flags.verdict = audit.report().verdict()
    return {layer: sorted(flags[node]) for layer, node in _LAYER_IDS[nesting].items()}


@pytest.mark.parametrize("kind,layer,flag", [("dead", "fc2", "DEAD"), ("saturated", "fc1", "SATURATED"),
                                             ("healthy", None, None)])
def test_no_flag_of_a_layer_changes_when_the_same_layers_are_nested_differently(kind, layer, flag):
    flat = _layer_flags(kind, "flat")
    if flag is None:
        assert all(f == ["HEALTHY"] for f in flat.values()), flat
    else:
        assert flag in flat[layer], flat
    assert _layer_flags(kind, "wrapped") == flat
    assert _layer_flags(kind, "nested") == flat
    # In an nn.ModuleList the dead ReLU was SATURATED's or nothing's: fc2's output before it was
    # recorded (its |x| near 10), not the ReLU's zeros.
    assert _layer_flags(kind, "listed") == flat


class _Unordered(nn.Module):
    """An nn.ModuleList whose order is not its forward's: the ReLU after fc in the list is
    applied to the input, before fc."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.layers = nn.ModuleList([nn.Linear(16, 16), nn.ReLU()])
        with torch.no_grad():
            self.layers[0].bias.fill_(-10.0)

    def forward(self, x):
        return self.layers[0](self.layers[1](x))


def test_a_list_groups_an_activation_only_where_the_forward_feeds_it():
    model = _Unordered()
    x = torch.randn(32, 16)
    with gradscope.Audit(model) as audit:
        model(x).sum().backward()
        audit.step(torch.optim.SGD(model.parameters(), lr=0.0))
    act = next(r.stats for r in audit.records() if r.node == "layers/0" and r.site == "activation")
    with torch.no_grad():
        truth = model.layers[0](torch.relu(x))  # fc's own output: the ReLU never took it
    assert act.count == truth.numel()
    assert math.isclose(act.sum, truth.double().sum().item(), rel_tol=1e-9)
    assert "DEAD" not in audit.report().node("layers/0").flags


def test_the_verdict_counts_nodes_not_the_submodules_recorded_inside_them():
    # Nested: nodes block1, block2, out; block1/fc1 and block2/fc2 are recorded inside them
    # (auto scope) and their flags roll up, so the verdict counts 3 nodes, as flat.
    _layer_flags("dead", "flat")
    flat = _layer_flags.verdict
    _layer_flags("dead", "nested")
    nested = _layer_flags.verdict
    assert "2 of 3 nodes flagged" in flat
    assert "2 of 3 nodes flagged" in nested, nested


def test_a_nan_born_in_the_forward_pass_is_still_nan_under_a_scaler():
    model = Fp16Mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = CpuGradScaler(init_scale=2.0 ** 16)
    with gradscope.Audit(model, scaler=scaler) as audit:
        for step, (x, y) in enumerate(batches(10)):
            if step == 5:
                x[0, 0] = float("nan")  # the scaler skips this step too, but the NaN is the model's
            opt.zero_grad()
            scaler.scale(nn.functional.cross_entropy(model(x), y)).backward()
            audit.step(opt)
            scaler.update()
    report = audit.report()
    assert 5 in scaler.skipped_steps
    assert 5 in list(report.loss_scale.skipped_steps)
    assert "NAN" in report.node("fc1").flags
    origin = report.nonfinite_origin
    assert (origin.step, origin.node, origin.phase) == (5, "fc1", "forward")


def interrupted_training(tmp_path, raise_at, steps=8):
    """Trains `steps` steps into a run whose on_step raises KeyboardInterrupt (Ctrl-C) at the
    steps in `raise_at`; the loop catches it and goes on. Returns (steps caught, steps saved)."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    run = tmp_path / "run"

    def on_step(records):
        if records[0].step in raise_at:
            raise KeyboardInterrupt

    caught = []
    with gradscope.Audit(model, run=run, on_step=on_step) as audit:
        for step, (x, y) in zip(range(steps), batches(steps)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            try:
                audit.step(opt)
            except KeyboardInterrupt:
                caught.append(step)
    return caught, gradscope.load_run(run).steps


@pytest.mark.parametrize("raise_at", [{1, 4, 5}, set(range(8))])
def test_a_callback_that_raises_loses_no_step_from_the_run(tmp_path, raise_at):
    caught, saved = interrupted_training(tmp_path, raise_at)
    assert caught == sorted(raise_at)
    assert saved == 8  # the run got each step before the callback did


def test_ctrl_c_in_a_callback_stops_training_with_every_completed_step_saved(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    run = tmp_path / "run"

    def on_step(records):
        if records[0].step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with gradscope.Audit(model, run=run, on_step=on_step) as audit:
            for x, y in batches(8):
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                audit.step(opt)
    assert gradscope.load_run(run).steps == 4  # steps 0-3: the interrupted one is complete
