"""torch.compile under an Audit: the compiled model gives the eager model's findings (flags,
flagged nodes, first steps) on the demo's planted faults and on the unstable GPT, whether the
Audit is made on the model before torch.compile, on torch.compile's wrapper, or before
model.compile(); a model whose compiled code was made before the Audit added its hooks (which
then never run) is refused at step(), never audited silently; fullgraph=True fails with
gradscope's reason; and no eager loop is refused. The truth is the eager run of the same loop.

Each compile takes seconds to tens of seconds on a CPU: a test compiles once, after
torch.compiler.reset() (compiled code is shared between instances of a class)."""
import pytest
import torch
from torch import nn

import gradscope
from models import batches, mlp, train
import scenarios
from scenarios import NAN_STEP, SCENARIOS, load_digits
from unstable_gpt import run_gpt

STEPS = 60        # the scenarios' (test_scenarios.py)


@pytest.fixture(scope="module")
def digits(digits_csv):
    return load_digits(digits_csv)


@pytest.fixture(autouse=True)
def fresh_compiler():
    """No compiled code carried from one test to the next (nor left to the other test files)."""
    torch.compiler.reset()
    yield
    torch.compiler.reset()


def findings(report):
    return dict(flags=report.flags(), flagged=report.flagged(),
                first={n.node: {e.flag: e.first_step for e in n.evidence} for n in report.nodes})


def run_scenario(name, x, y, how):
    """scenarios.run's loop (Adam 1e-3, batch 64, the channel view), the model called as `how`
    says: "eager"; "compile" (Audit(model), then torch.compile(model)); "wrapper"
    (Audit(torch.compile(model))); "in_place" (Audit(model), then model.compile())."""
    torch.manual_seed(7)
    model = SCENARIOS[name]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(7)  # the batches do not depend on what compiling draws
    call = torch.compile(model) if how == "wrapper" else model
    audit = gradscope.Audit(call, channels_all_nodes=gradscope.ChannelView(1, 5))
    if how == "compile":
        call = torch.compile(model)
    elif how == "in_place":
        model.compile()
    with audit:
        scenarios.train(name, model, call, audit, opt, x, y, STEPS, generator=g)
    return audit


@pytest.mark.parametrize("name, how", [("dying-relu", "compile"), ("vanishing-trunk", "in_place"),
                                       ("nan-later", "wrapper")])
def test_compiled_scenarios_give_the_eager_findings(name, how, digits):
    eager = run_scenario(name, *digits, "eager")
    truth = findings(eager.report())
    planted = {"dying-relu": ("fc2", "DEAD", 0), "vanishing-trunk": ("trunk0", "VANISHING", 0),
               "nan-later": ("logfeat", "NAN", NAN_STEP)}[name]
    assert truth["first"][planted[0]].get(planted[1]) == planted[2], truth  # the fault is there to find
    torch.compiler.reset()
    compiled = run_scenario(name, *digits, how)
    assert compiled.node_ids() == eager.node_ids()  # Audit(torch.compile(m)): no "_orig_mod" prefix
    assert findings(compiled.report()) == truth
    # Every node recorded its activation at every step, as in eager.
    sites = lambda a: sorted({(r.step, r.node, r.site) for r in a.records()})  # noqa: E731
    assert sites(compiled) == sites(eager)


def test_compiled_unstable_gpt_gives_the_eager_findings():
    eager = findings(run_gpt(compiled=False).report())
    assert eager["first"]["blocks.0.attn"].get("ATTENTION_LOGIT_GROWTH") == 20, eager
    torch.compiler.reset()
    assert findings(run_gpt(compiled=True).report()) == eager


REFUSED = r"no forward of this step reached the audit's hooks.*torch\.compiler\.reset\(\)"


def step_through(call, opt, x, y):
    opt.zero_grad()
    nn.functional.cross_entropy(call(x), y).backward()


def test_compiled_code_made_before_the_audit_is_refused_then_recorded_after_reset():
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    compiled = torch.compile(model)
    data = batches(4)
    step_through(compiled, opt, *data[0])  # a training step compiled before the Audit
    opt.step()
    audit = gradscope.Audit(model)
    step_through(compiled, opt, *data[1])  # the hooks are not in the compiled code: they never run
    with pytest.raises(gradscope.Error, match=REFUSED):
        audit.step(opt)
    assert audit.records() == [] and audit.current_step == 0  # the refused step kept nothing
    torch.compiler.reset()  # the cure the message names: compiled again, with the hooks
    for x, y in data[2:]:
        step_through(compiled, opt, x, y)
        audit.step(opt)
    assert {r.site for r in audit.records() if r.node == "fc1"} >= {"activation", "output_grad"}
    assert audit.report().steps == 2
    audit.close()


def test_code_compiled_for_another_instance_is_refused_at_after_step():
    first = mlp(seed=1)
    opt = torch.optim.Adam(first.parameters(), lr=1e-2)
    step_through(torch.compile(first), opt, *batches(1)[0])  # e.g. a baseline trained before
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with gradscope.Audit(model) as audit:
        step_through(torch.compile(model), opt, *batches(1)[0])  # runs the first one's code
        opt.step()
        with pytest.raises(gradscope.Error, match=r"after_step\(\): .*" + REFUSED):
            audit.after_step()
    assert audit.records() == []


def test_fullgraph_fails_with_gradscope_reason():
    model = mlp()
    with gradscope.Audit(model):
        with pytest.raises(Exception, match="gradscope.Audit records the model here.*fullgraph=True"):
            torch.compile(model, fullgraph=True)(torch.randn(4, 8))


# --- never refused in eager ----------------------------------------------------------------------

def test_eager_loops_are_never_refused():
    data = batches(6)
    for kwargs, after_step in [({}, False), ({}, True), ({"sample_every": 3}, False), ({"sample_every": 3}, True)]:
        model = mlp()
        with gradscope.Audit(model, **kwargs) as audit:
            train(model, data, audit, after_step=after_step)
        assert audit.current_step == 6


def test_accumulation_pauses_evaluation_and_function_steps_are_not_refused():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = batches(4)
    with gradscope.Audit(model) as audit:
        for i, (x, y) in enumerate(data):
            opt.zero_grad()
            for xb, yb in zip((x[:16], x[16:]), (y[:16], y[16:])):  # accumulation: two forwards
                if i == 1:
                    with audit.paused():  # the whole pass paused: not recorded, still not refused
                        nn.functional.cross_entropy(model(xb), yb).backward()
                else:
                    nn.functional.cross_entropy(model(xb), yb).backward()
            model.eval()
            with torch.no_grad():
                model(x)  # an evaluation pass
            model.train()
            audit.step(opt) if i % 2 else audit.step(lambda: opt.step())
    assert audit.current_step == 4


def test_nodes_called_only_through_tap_are_not_refused():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with gradscope.Audit(model, nodes=["fc1", "out"]) as audit:
        for x, y in batches(3):
            opt.zero_grad()
            # The layers' weights used outside their modules: no hook sees the forward.
            h = audit.tap("fc1", nn.functional.linear(x, model.fc1.weight, model.fc1.bias).relu())
            logits = audit.tap("out", nn.functional.linear(h @ model.fc2.weight.T, model.out.weight, model.out.bias))
            nn.functional.cross_entropy(logits, y).backward()
            audit.step(opt)
    assert audit.current_step == 3
    assert {r.site for r in audit.records() if r.node == "fc1"} >= {"activation", "output_grad"}


def test_an_audit_made_after_backward_and_a_step_without_a_backward_are_not_refused():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step_through(model, opt, *batches(1)[0])
    with gradscope.Audit(model) as audit:  # the gradients were there before it: not new
        audit.step(opt)
        audit.step(opt)  # no backward since the last step: the same gradients again
    assert audit.current_step == 2
