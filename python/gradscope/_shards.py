"""Sharded parameters: DTensors, as FSDP2's fully_shard and tensor parallelism leave them.

A rank holds a shard of each such parameter (its local tensor) and of its gradient. The engine
measures the shard, not the DTensor (whose statistics would dispatch collectives of their own),
through a proxy: a plain tensor sharing the local shard's storage, whose gradient is set to the
local shard of the DTensor's gradient before each audited step. The engine is told each proxy's
whole shape and whether this rank's shard counts (a dimension of the device mesh along which the
parameter is replicated holds copies: only the copy at coordinate 0 counts), and merges the
node's parameter statistics as the sum of the ranks' counted shards (docs/distributed.md,
"Sharded parameters").
"""
import sys
import warnings

import torch

from ._engine import Error, ParameterShard


def dtensor_type():
    """torch's DTensor class, or None when no DTensor can exist yet (the module is imported by
    fully_shard and the tensor-parallel API, so it is not imported here for nothing)."""
    return getattr(sys.modules.get("torch.distributed.tensor"), "DTensor", None)


def module_type_name(module):
    """The module's class name as the model wrote it: fully_shard swaps a module's class for a
    subclass named FSDP<Name> (FSDPModule first among its bases)."""
    cls = type(module)
    fsdp = getattr(sys.modules.get("torch.distributed.fsdp"), "FSDPModule", None)
    if fsdp is not None and issubclass(cls, fsdp) and cls.__name__.startswith("FSDP"):
        bases = [b for b in cls.__bases__ if b is not fsdp]
        if bases:
            return bases[0].__name__
    return cls.__name__


def _local(t):
    """The local shard itself (to_local() under grad mode makes a new view each call)."""
    local = getattr(t, "_local_tensor", None)
    if local is None:
        with torch.no_grad():
            local = t.to_local()
    return local


def _group_ranks(group):
    import torch.distributed as dist
    return sorted(dist.get_process_group_ranks(group))


def _counted(param, name):
    """Whether this rank's shard counts: it is the copy at coordinate 0 of every mesh dimension
    along which the parameter is replicated."""
    coordinate = param.device_mesh.get_coordinate()
    if coordinate is None:
        raise Error(f"audit: parameter '{name}' is a DTensor on a device mesh that does not hold this rank")
    counted = True
    for dim, placement in enumerate(param.placements):
        if placement.is_partial():
            raise Error(f"audit: parameter '{name}' is a DTensor with a Partial placement: it holds no value until "
                        f"reduced; redistribute it to Shard or Replicate")
        if placement.is_replicate() and coordinate[dim] != 0:
            counted = False
    return counted


class Shards:
    """The proxies of one Audit's DTensor parameters and the shards the engine is told of."""

    def __init__(self, model, named_params, group, gradient_snr):
        """named_params: [(engine name "<node>.<path>", parameter)] of `model`; group: the
        Audit's resolved process group (None for one process)."""
        dtensor = dtensor_type()
        self._pairs = []     # (parameter, its local tensor when proxied, proxy)
        self._proxy = {}     # id(parameter) -> proxy
        self.options = {}    # engine name -> ParameterShard
        if dtensor is None:
            return
        sharded = [(n, p) for n, p in named_params if isinstance(p, dtensor)]
        if not sharded:
            return
        first = sharded[0][0]
        if group is None:
            raise Error(f"audit: parameter '{first}' is a DTensor (FSDP2's fully_shard or tensor parallelism): this "
                        f"rank holds a shard of it, which is the parameter only once merged with the other ranks'; "
                        f"pass process_group=True (or the group its device mesh spans)")
        if gradient_snr:
            raise Error("audit: gradient_snr is not merged across shards: leave it off for DTensor parameters "
                        f"('{first}')")
        fsdp = getattr(sys.modules.get("torch.distributed.fsdp"), "FSDPModule", None)
        by_fsdp = {id(p) for m in model.modules() if fsdp is not None and isinstance(m, fsdp) for p in m.parameters()}
        if any(id(p) not in by_fsdp for _, p in sharded):
            warnings.warn("gradscope: the model has DTensor parameters that fully_shard did not make (tensor "
                          "parallelism?): their parameter statistics are merged whole, but the activations and "
                          "attention heads of a tensor-parallel layer are each rank's slice, not yet merged as the "
                          "layer's (docs/distributed.md, \"Sharded parameters\")", stacklevel=3)
        ranks = _group_ranks(group)
        for name, p in sharded:
            mesh = sorted(p.device_mesh.mesh.flatten().tolist())
            if mesh != ranks:
                raise Error(f"audit: parameter '{name}' is sharded over the ranks {mesh} of its device mesh, but the "
                            f"audit's process_group holds the ranks {ranks}; give the audit the group the mesh spans")
            counted = _counted(p, name)
            self.options[name] = ParameterShard(list(p.shape), counted)
            if id(p) not in self._proxy:
                local = _local(p)
                proxy = local.detach().requires_grad_(p.requires_grad)
                self._proxy[id(p)] = proxy
                self._pairs.append((p, local, proxy))

    def __bool__(self):
        return bool(self._pairs)

    def measured(self, param):
        """The tensor the engine measures for `param`: its proxy, or the parameter itself."""
        return self._proxy.get(id(param), param)

    def take_grads(self):
        """Before an audited step: each proxy aliases its parameter's local shard (FSDP2 may
        re-make it at its lazy initialisation) and holds the local shard of its gradient."""
        for i, (p, local, proxy) in enumerate(self._pairs):
            now = _local(p)
            if now is not local:
                proxy.data = now
                self._pairs[i] = (p, now, proxy)
            g = p.grad
            if g is None:
                proxy.grad = None
                continue
            if isinstance(g, dtensor_type()) and tuple(g.placements) != tuple(p.placements):
                # A gradient left Partial (or laid out otherwise): the parameter's layout, a collective
                # every rank makes at the same point.
                g = g.redistribute(p.device_mesh, p.placements)
            g = _local(g) if isinstance(g, dtensor_type()) else g
            if g.shape != proxy.shape or g.dtype != proxy.dtype:
                raise Error(f"audit: a DTensor parameter's local gradient is {g.dtype}{list(g.shape)} but its local "
                            f"shard is {proxy.dtype}{list(proxy.shape)}")
            proxy.grad = g

    def drop_grads(self):
        """After the step: the proxies let go of the gradients (zero_grad frees them)."""
        for _, _, proxy in self._pairs:
            proxy.grad = None
