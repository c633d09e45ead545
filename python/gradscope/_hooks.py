"""What an Audit gathers in the forward: the hooks that hand each node's output (and the
pre-activation before a squashing function) to the C++ engine, grouped as docs/python.md says:
in an nn.Sequential an audited child with the parameter-free children after it, in an
nn.ModuleList the same as far as the forward feeds them in turn. The Audit (_audit.py) measures,
judges and writes through its engine; these hooks only decide what each node's output is.
"""
import torch
from torch import nn

from ._engine import Error
from ._shards import settled
from ._attention import attention_modules, wrap_attention

# The squashing functions whose input is recorded as the node's pre-activation (exact types,
# as the C++ Sequential forward checks them).
_SQUASHING = (nn.Tanh, nn.Sigmoid, nn.Hardtanh, nn.Softsign)

# What torch.compile says when fullgraph=True meets a hook of the audit.
_COMPILE_REASON = ("gradscope.Audit records the model here, outside the compiled graph: each audited node is a "
                   "graph break, so a model under an Audit cannot be compiled with fullgraph=True; compile it "
                   "without fullgraph, or close the Audit first")


def _untraced(fn):
    """`fn` as torch.compile must run it: called as Python, never traced (dynamo would guard on
    the audit's state and recompile as it changes), with the reason fullgraph=True reports; `fn`
    itself on a torch without torch.compiler.disable (before 2.1: no torch.compile to meet)."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    if disable is None:
        return fn
    try:
        return disable(fn, reason=_COMPILE_REASON)
    except TypeError:  # an older torch: no reason=
        return disable(fn)



def _has_params(module):
    return next(module.parameters(), None) is not None


def _sequential_group(sequential, child):
    """(the module whose output is `child`'s activation, whether `child`'s own output is its
    pre-activation): in an nn.Sequential the parameter-free children after `child` belong to
    it, up to the next child with parameters; when the first of them squashes (tanh, sigmoid,
    ...), `child`'s own output is recorded as the pre-activation (for SATURATED)."""
    children = list(sequential.children())
    at = next((i for i, c in enumerate(children) if c is child), None)
    if at is None:
        return child, None
    end = at
    while end + 1 < len(children) and not _has_params(children[end + 1]):
        end += 1
    squashes = end > at and type(children[at + 1]) in _SQUASHING
    return children[end], (children[at + 1] if squashes else None)


def _list_followers(module_list, child):
    """The parameter-free children after `child` in an nn.ModuleList, up to the next child with
    parameters: what an nn.Sequential would group with it, should the forward feed them in turn."""
    children = list(module_list.children())
    at = next((i for i, c in enumerate(children) if c is child), None)
    followers = []
    while at is not None and at + 1 + len(followers) < len(children) and not _has_params(children[at + 1 + len(followers)]):
        followers.append(children[at + 1 + len(followers)])
    return followers


class _ListChain:
    """An audited child of an nn.ModuleList and the parameter-free children after it (a ReLU,
    dropout): grouped as in an nn.Sequential, but only as far as the forward really feeds each
    one the previous one's output, since a list's order need not be its forward's. The group's
    output is the node's activation (a dead ReLU reads DEAD, as in an nn.Sequential); the
    child's own output is the pre-activation when a squashing function takes it. Where the chain
    breaks, the last output it reached is the activation, as for a lone module."""

    def __init__(self, audit, node_id, head, followers):
        self.audit, self.node_id, self.modules = audit, node_id, [head] + followers
        self.pending = None  # the output the chain has reached in this call, not yet tapped
        self.at = 0          # modules[at - 1] produced it

    def hooks(self):
        return [m.register_forward_hook(_untraced(self._hook(k))) for k, m in enumerate(self.modules)]

    def _hook(self, k):
        def hook(module, inputs, output):
            self.audit._hooks_ran = True
            if not (self.audit._audited and module.training):
                return
            if k == 0:
                self.flush()
            elif self.pending is None or self.at != k or not inputs or inputs[0] is not self.pending:
                return  # another call of this module, not the chain's next link
            elif k == 1 and type(module) in _SQUASHING:
                self.audit._engine.pre_activation(self.node_id, self.pending)
            output, replaced = settled(output, self.node_id)
            self.pending = _first_tensor(output, self.node_id, module, submodule=True)
            self.at = k + 1
            if self.at == len(self.modules):
                self.flush()
            return output if replaced else None
        return hook

    def flush(self):
        if self.pending is not None:
            self.audit._engine.tap(self.node_id, self.pending)
        self.pending, self.at = None, 0


def _first_tensor(output, node, module, submodule=False):
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)):
        for item in output:
            if isinstance(item, torch.Tensor):
                return item
    if submodule:
        parent = node.rsplit("/", 1)[0]
        raise Error(f"audit: submodule '{node}' ({type(module).__name__}) returned {type(output).__name__}, not a "
                    f"tensor; leave it out of the scope of '{parent}' (scopes={{'{parent}': "
                    f"gradscope.NodeScope(patterns=[...])}} or gradscope.NodeScope.none())")
    raise Error(f"audit: node '{node}' ({type(module).__name__}) returned {type(output).__name__}, not a tensor; "
                f"pass nodes=[...] to audit other modules, or measure a tensor yourself with audit.tap('{node}', x)")



class _Hooks:
    """The Audit's forward hooks (a base of Audit: the state they read is the Audit's)."""

    def _install_hooks(self, sequential_groups):
        if self._attention_every > 0:
            for node_id, mha in attention_modules(self._nodes, self._submodules):
                self._handles.append(wrap_attention(self, node_id, mha, _untraced))
        self._handles.append(self._model.register_forward_pre_hook(_untraced(self._before_forward)))
        self._handles.append(self._model.register_forward_hook(_untraced(self._after_forward)))
        parents = {}
        for _, node in self._nodes:
            for parent in node.modules():
                for child in parent.children():
                    parents.setdefault(id(child), parent)
        for sub_id, module in self._submodules:
            # Inside an nn.Sequential, at any depth, the parameter-free children after a scoped
            # submodule belong to it, as at the top level: a ReLU's zeros are its layer's. Inside
            # an nn.ModuleList, the same as far as the forward feeds them in turn (_ListChain).
            parent = parents.get(id(module))
            followers = _list_followers(parent, module) if isinstance(parent, nn.ModuleList) else []
            if followers:
                chain = _ListChain(self, sub_id, module, followers)
                self._chains.append(chain)
                self._handles.extend(chain.hooks())
                continue
            end, squashing = _sequential_group(parent, module) if isinstance(parent, nn.Sequential) else (module, None)
            self._handles.append(end.register_forward_hook(_untraced(self._tap_hook(sub_id, submodule=True))))
            if squashing is not None:
                self._handles.append(module.register_forward_hook(_untraced(self._pre_activation_hook(sub_id))))
        if not sequential_groups:
            for node_id, module in self._nodes:
                self._handles.append(module.register_forward_hook(_untraced(self._tap_hook(node_id))))
            return
        # nn.Sequential: groups of an audited child and the parameter-free children after it.
        children = list(self._model.named_children())
        audited = {name for name, _ in self._nodes}
        current = None
        for i, (name, child) in enumerate(children):
            last = i + 1 == len(children)
            next_audited = not last and children[i + 1][0] in audited
            if name in audited:
                current = name
                if not last and not next_audited and type(children[i + 1][1]) in _SQUASHING:
                    self._handles.append(child.register_forward_hook(_untraced(self._pre_activation_hook(name))))
            if current is not None and (next_audited or last):
                self._handles.append(child.register_forward_hook(_untraced(self._tap_hook(current))))
                current = None

    # Every hook first notes that a forward reached it (_hooks_ran), whatever it then records.
    # A module in eval mode runs an evaluation pass: not recorded (the engine checks grad
    # mode, checkpoint recomputation and pauses; the shells it audits have no eval flag).
    def _tap_hook(self, node_id, submodule=False):
        def hook(module, inputs, output):
            self._hooks_ran = True
            if self._audited and module.training:
                output, replaced = settled(output, node_id)
                self._engine.tap(node_id, _first_tensor(output, node_id, module, submodule))
                return output if replaced else None
        return hook

    def _after_forward(self, module, inputs, output):
        self._hooks_ran = True
        for chain in self._chains:
            chain.flush()

    def _pre_activation_hook(self, node_id):
        def hook(module, inputs, output):
            self._hooks_ran = True
            if self._audited and module.training:
                output, replaced = settled(output, node_id)
                self._engine.pre_activation(node_id, _first_tensor(output, node_id, module))
                return output if replaced else None
        return hook

    def _before_forward(self, module, inputs):
        self._hooks_ran = True
        self._step_begins(module.training)
