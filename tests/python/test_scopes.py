"""Per-node scopes (gradscope.NodeScope): the node ids of tests/torch/audit_scope_test.cpp on the
same model shape, records of scoped submodules measured by hooks, and bad scope input."""
import collections

import pytest
import torch
from torch import nn

import gradscope
from conftest import run_json


# encoder -> backbone (Sequential of 4 blocks, each attn + mlp), plus a head: the C++ test's model.
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.mlp = nn.Linear(4, 4)
        self.scale = 1.0

    def forward(self, x):
        return self.mlp(torch.tanh(self.attn(x)) * self.scale)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(*[Block() for _ in range(4)])

    def forward(self, x):
        return self.backbone(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


def ids(model, **kw):
    with gradscope.Audit(model, **kw) as audit:
        return audit.node_ids()


BLOCKS = [f"encoder/backbone.{i}" for i in range(4)]


def test_auto_descends_through_single_child_wrappers():
    assert ids(Model()) == ["encoder"] + BLOCKS + ["head"]


def test_depth_patterns_and_max_modules():
    m = Model()
    attn = {"encoder": gradscope.NodeScope(patterns=["backbone.*.attn"]), "head": gradscope.NodeScope.none()}
    assert ids(m, scopes=attn) == ["encoder"] + [b + ".attn" for b in BLOCKS] + ["head"]
    assert ids(m, scopes={"encoder": gradscope.NodeScope.to_depth(1)}) == ["encoder", "encoder/backbone", "head"]
    assert ids(m, scopes={"encoder": gradscope.NodeScope.matching(["backbone.1.mlp"])}) == [
        "encoder", "encoder/backbone.1.mlp", "head"]
    # depth 3 = the 8 Linear layers inside the blocks, 3 kept.
    with gradscope.Audit(m, scopes={"encoder": gradscope.NodeScope(depth=3, max_modules=3)}) as audit:
        assert audit.node_ids() == ["encoder", "encoder/backbone.0.attn", "encoder/backbone.0.mlp",
                                    "encoder/backbone.1.attn", "head"]
        assert len(audit.warnings()) == 1
        assert "matched 8 submodules, kept the first 3" in audit.warnings()[0]


def test_per_id_beats_per_class_beats_registered_beats_auto():
    m = Model()
    gradscope.register_scope(Encoder, gradscope.NodeScope(depth=1))
    try:
        assert ids(m) == ["encoder", "encoder/backbone", "head"]
        assert ids(m, scopes={Encoder: gradscope.NodeScope(depth=2)}) == ["encoder"] + BLOCKS + ["head"]
        assert ids(m, scopes={Encoder: gradscope.NodeScope(depth=2), "encoder": gradscope.NodeScope.none()}) == [
            "encoder", "head"]
    finally:
        gradscope.register_scope(Encoder, None)  # leave the registry as found
    assert ids(m) == ["encoder"] + BLOCKS + ["head"]


def test_scoped_submodules_record_their_own_activations_gradients_and_parameters():
    torch.manual_seed(0)
    m = Model()
    attn2 = m.encoder.backbone[2].attn
    seen = {}
    attn2.register_forward_hook(lambda mod, i, out: seen.update(act=out))
    attn2_out_grad = []
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with gradscope.Audit(m, scopes={"encoder": gradscope.NodeScope(patterns=["backbone.2.attn"])}) as audit:
        opt.zero_grad()
        y = m(torch.randn(8, 4))
        seen["act"].register_hook(lambda g: attn2_out_grad.append(g.clone()))
        y.sum().backward()
        grad = torch.cat([attn2.weight.grad.flatten(), attn2.bias.grad.flatten()]).double()
        audit.step(opt)
        rec = {(r.node, r.site): r.stats for r in audit.records() if r.step == 0}
    node = "encoder/backbone.2.attn"
    assert {s for n, s in rec if n == node} == {"activation", "output_grad", "param_grad", "param", "update"}
    act = seen["act"].detach().double()
    assert rec[(node, "activation")].count == 32
    assert rec[(node, "activation")].sum == pytest.approx(act.sum().item(), rel=1e-12)
    assert rec[(node, "output_grad")].l2 == pytest.approx(attn2_out_grad[0].double().norm().item(), rel=1e-6)
    assert rec[(node, "param_grad")].count == 20  # attn's weight and bias only
    assert rec[(node, "param_grad")].l2 == pytest.approx(grad.norm().item(), rel=1e-6)
    assert audit.hooks == 0


def test_submodule_flags_roll_up_to_the_node():
    # Scaling block 1's attention output by 1e-12 starves everything before it in backward
    # (block 0); block 1 itself keeps a normal gradient on its mlp bias (the C++ test's case).
    torch.manual_seed(0)
    m = Model()
    m.encoder.backbone[1].scale = 1e-12
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    with gradscope.Audit(m) as audit:
        for _ in range(3):
            opt.zero_grad()
            m(torch.randn(8, 4)).sum().backward()
            audit.step(opt)
    r = audit.report()
    nodes = {n.node: n for n in r.nodes}
    assert [n.node for n in r.nodes] == ["encoder"] + BLOCKS + ["head"]
    assert nodes["encoder/backbone.0"].flags == ["VANISHING"]
    assert [nodes[b].flags for b in BLOCKS[1:]] == [["HEALTHY"]] * 3
    assert nodes["encoder"].flags == ["VANISHING"]  # rolled up from backbone.0
    assert nodes["encoder"].evidence[0].detail == "in: backbone.0"
    assert nodes["encoder"].evidence[0].value == 1


def test_scope_sample_every_records_submodules_less_often():
    m = Model()
    opt = torch.optim.SGD(m.parameters(), lr=0.0)
    scope = gradscope.NodeScope(patterns=["backbone.0.attn"], sample_every=2)
    with gradscope.Audit(m, scopes={"encoder": scope}) as audit:
        for _ in range(4):
            m(torch.randn(2, 4)).sum().backward()
            audit.step(opt)
        steps = {r.step for r in audit.records() if r.node == "encoder/backbone.0.attn"}
        assert steps == {0, 2}
        assert {r.step for r in audit.records() if r.node == "encoder"} == {0, 1, 2, 3}


def test_bad_scope_input_names_what_is_wrong():
    m = Model()
    with pytest.raises(gradscope.Error, match=r"scope for unknown node id 'enc'.*'encoder', 'head'"):
        gradscope.Audit(m, scopes={"enc": gradscope.NodeScope.none()})
    with pytest.raises(gradscope.Error, match=r"scope for unknown node id 'encoder/backbone.0'"):
        gradscope.Audit(m, scopes={"encoder/backbone.0": gradscope.NodeScope.none()})
    with pytest.raises(gradscope.Error, match=r"depth must be >= 0, got -1"):
        gradscope.NodeScope(depth=-1)
    with pytest.raises(gradscope.Error, match=r"depth must be >= 0, got -2"):
        gradscope.NodeScope.to_depth(-2)
    with pytest.raises(gradscope.Error, match=r"node 'encoder': pattern 'backbone.\*.atn' matches no submodule"):
        gradscope.Audit(m, scopes={"encoder": gradscope.NodeScope(patterns=["backbone.*.atn"])})
    with pytest.raises(gradscope.Error, match=r"node 'encoder': no patterns"):
        gradscope.Audit(m, scopes={"encoder": gradscope.NodeScope(patterns=[])})
    with pytest.raises(gradscope.Error, match=r"depth or patterns, not both"):
        gradscope.NodeScope(depth=1, patterns=["a"])
    with pytest.raises(gradscope.Error, match=r"sample_every must be >= 1, got 0"):
        gradscope.NodeScope(sample_every=0)
    with pytest.raises(gradscope.Error, match=r"scope for 'encoder' must be a gradscope.NodeScope, got str"):
        gradscope.Audit(m, scopes={"encoder": "depth=1"})
    with pytest.raises(gradscope.Error, match=r"scope for class LSTM: no node is a LSTM"):
        gradscope.Audit(m, scopes={nn.LSTM: gradscope.NodeScope.none()})
    with pytest.raises(gradscope.Error, match=r"not a torch.nn.Module class"):
        gradscope.register_scope(int, gradscope.NodeScope.none())
    assert m.encoder.backbone[0].attn._forward_hooks == {}  # a refused audit leaves no hook


def test_a_scoped_submodule_with_a_non_tensor_output_is_an_error_naming_it():
    class Dicty(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return {"y": self.fc(x)}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Module()
            self.body.inner = Dicty()
            self.body.out = nn.Linear(2, 1)

        def forward(self, x):
            return self.body.out(self.body.inner(x)["y"])

    net = Net()
    with pytest.raises(gradscope.Error, match=r"submodule 'body/inner' \(Dicty\) returned dict.*NodeScope"):
        with gradscope.Audit(net) as audit:
            net(torch.randn(3, 2))
    assert audit.hooks == 0
    with gradscope.Audit(net, scopes={"body": gradscope.NodeScope(patterns=["out"])}) as audit:
        net(torch.randn(3, 2)).sum().backward()
        audit.step(lambda: None)
    assert audit.node_ids() == ["body", "body/out"]


def test_scoped_records_equal_the_cpp_audit_on_the_same_model(cpp_reference):
    # cpp_reference parity-scoped: the same seeded model, with enc scoped to {"a", "b"} in C++.
    seed, steps = 11, 4
    class ScopedNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(collections.OrderedDict([("a", nn.Linear(16, 32)), ("act", nn.Tanh()),
                                                              ("b", nn.Linear(32, 32))]))
            self.out = nn.Linear(32, 4)

        def forward(self, x):
            return self.out(torch.relu(self.enc(x)))

    torch.manual_seed(seed)
    net = ScopedNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with gradscope.Audit(net, scopes={"enc": gradscope.NodeScope(patterns=["a", "b"])}) as audit:
        for _ in range(steps):
            x = torch.randn(8, 16) * 3
            y = torch.randn(8, 4)
            opt.zero_grad()
            (net(x) - y).pow(2).mean().backward()
            audit.step(opt)
    assert audit.node_ids() == ["enc", "enc/a", "enc/b", "out"]
    cpp = {(r["step"], r["node"], r["site"]): r for r in run_json([cpp_reference, "parity-scoped", str(seed), str(steps)])}
    py = {(r.step, r.node, r.site): r.stats for r in audit.records()}
    # enc, enc/a, enc/b, out x activation, output grad, param grad, param, update; and enc/a's
    # pre-activation (the Tanh after it in enc's Sequential belongs to it)
    assert len(cpp) == steps * 4 * 5 + steps
    assert set(py) == set(cpp)
    for key, c in cpp.items():
        s = py[key]
        got = {"count": s.count, "zero": s.zero, "sum": s.sum, "sum_sq": s.sum_sq, "min": s.min, "max": s.max}
        assert got == {k: c[k] for k in got}, key
