"""Attention statistics of nn.MultiheadAttention without changes to the model: at the steps the
audit measures attention, the module's pre-softmax logits are computed from its inputs and its
own projection weights (q and k only; the module's forward runs unchanged) and handed to the
engine with the masks the call was given."""
import inspect

import torch
from torch import nn


class _ForwardWrap:
    """An instance-level forward around a module's own; remove() restores the class's."""

    def __init__(self, module, forward):
        self.module = module
        module.forward = forward

    def remove(self):
        if "forward" in self.module.__dict__:
            del self.module.forward


def attention_modules(nodes, submodules):
    """[(id, nn.MultiheadAttention)]: each attention module inside the audited nodes, under the
    id of its scoped submodule when it is one, else of the node that holds it."""
    scoped = {id(m): i for i, m in submodules}
    out, seen = [], set()
    for node_id, node in nodes:
        for module in node.modules():
            if isinstance(module, nn.MultiheadAttention) and id(module) not in seen:
                seen.add(id(module))
                out.append((scoped.get(id(module), node_id), module))
    return out


def _record(audit, node_id, mha, query, key, key_padding_mask, attn_mask):
    """Hands one call to the engine, which computes its logits from the module's q and k
    projections under its masks (gradscope::torch::projected_attention_logits, shared with the
    LibTorch adapter). A module that appends keys of its own (add_bias_kv, add_zero_attn) is
    not measured."""
    if mha.bias_k is not None or mha.add_zero_attn:
        return
    batch_first = mha.batch_first
    if query.dim() == 2:  # unbatched [L, E]: one batch row
        query, key, batch_first = query.unsqueeze(0), key.unsqueeze(0), True
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    e = mha.embed_dim
    if mha._qkv_same_embed_dim:
        wq, wk = mha.in_proj_weight[:e], mha.in_proj_weight[e:2 * e]
    else:
        wq, wk = mha.q_proj_weight, mha.k_proj_weight
    bq = bk = None
    if mha.in_proj_bias is not None:
        bq, bk = mha.in_proj_bias[:e], mha.in_proj_bias[e:2 * e]
    audit._engine.projected_attention(node_id, query, key, wq, bq, wk, bk, mha.num_heads, batch_first,
                                      attn_mask, key_padding_mask)


def wrap_attention(audit, node_id, mha, untraced=lambda fn: fn):
    """Wraps `mha`'s forward; returns the handle that restores it. `untraced(fn)` is the
    recording as torch.compile must run it (the audit's hooks are never traced); the module's
    own forward stays compilable."""
    original = mha.forward
    signature = inspect.signature(original)

    def record(args, kwargs):
        audit._hooks_ran = True  # first: a forward reached the audit (Audit.step checks it)
        if audit._audited and mha.training and torch.is_grad_enabled() and audit._engine.attention_step():
            call = signature.bind(*args, **kwargs)
            call.apply_defaults()
            a = call.arguments
            _record(audit, node_id, mha, a["query"], a["key"], a.get("key_padding_mask"), a.get("attn_mask"))

    record = untraced(record)

    def forward(*args, **kwargs):
        record(args, kwargs)
        return original(*args, **kwargs)

    return _ForwardWrap(mha, forward)
