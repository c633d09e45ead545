"""Attention statistics of nn.MultiheadAttention without changes to the model: at the steps the
audit measures attention, the module's pre-softmax logits are computed from its inputs and its
own projection weights (q and k only; the module's forward runs unchanged) and handed to the
engine with the masks the call was given."""
import inspect
import math

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


def _logits(mha, query, key, key_padding_mask, attn_mask):
    """[batch, heads, queries, keys] pre-softmax logits, hidden keys at -inf; None when the module
    appends keys of its own (add_bias_kv, add_zero_attn), which this does not reproduce."""
    if mha.bias_k is not None or mha.add_zero_attn:
        return None
    if query.dim() == 2:  # unbatched
        query, key = query.unsqueeze(1 if not mha.batch_first else 0), key.unsqueeze(1 if not mha.batch_first else 0)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    if not mha.batch_first:
        query, key = query.transpose(0, 1), key.transpose(0, 1)
    e, h = mha.embed_dim, mha.num_heads
    if mha._qkv_same_embed_dim:
        wq, wk = mha.in_proj_weight[:e], mha.in_proj_weight[e:2 * e]
    else:
        wq, wk = mha.q_proj_weight, mha.k_proj_weight
    bq = bk = None
    if mha.in_proj_bias is not None:
        bq, bk = mha.in_proj_bias[:e], mha.in_proj_bias[e:2 * e]
    b, lq, lk, hd = query.shape[0], query.shape[1], key.shape[1], e // h
    q = nn.functional.linear(query, wq, bq).view(b, lq, h, hd).transpose(1, 2)
    k = nn.functional.linear(key, wk, bk).view(b, lk, h, hd).transpose(1, 2)
    logits = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(hd)
    if attn_mask is not None:
        m = attn_mask.view(b, h, lq, lk) if attn_mask.dim() == 3 else attn_mask
        logits = logits.masked_fill(m, -math.inf) if m.dtype == torch.bool else logits + m.float()
    if key_padding_mask is not None:
        p = key_padding_mask.view(b, 1, 1, lk)
        logits = logits.masked_fill(p, -math.inf) if p.dtype == torch.bool else logits + p.float()
    return logits


def wrap_attention(audit, node_id, mha):
    """Wraps `mha`'s forward; returns the handle that restores it."""
    original = mha.forward
    signature = inspect.signature(original)

    def forward(*args, **kwargs):
        if audit._audited and mha.training and torch.is_grad_enabled() and audit._engine.attention_step():
            call = signature.bind(*args, **kwargs)
            call.apply_defaults()
            a = call.arguments
            with torch.no_grad():
                logits = _logits(mha, a["query"], a["key"], a.get("key_padding_mask"), a.get("attn_mask"))
            if logits is not None:
                audit._engine.attention(node_id, logits, None)
        return original(*args, **kwargs)

    return _ForwardWrap(mha, forward)
