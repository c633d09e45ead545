"""Sharded parameters: DTensors, as FSDP2's fully_shard and tensor parallelism leave them.

A rank holds a shard of each such parameter (its local tensor) and of its gradient. The engine
measures the shard, not the DTensor (whose statistics would dispatch collectives of their own),
through a proxy: a plain tensor sharing the local shard's storage, whose gradient is set to the
local shard of the DTensor's gradient before each audited step. The engine is told each proxy's
whole shape and whether this rank's shard counts (a dimension of the device mesh along which the
parameter is replicated holds copies: only the copy at coordinate 0 counts), and merges the
node's parameter statistics as the sum of the ranks' counted shards (docs/distributed.md,
"Sharded parameters").

Tensor parallelism (DTensor parameters that fully_shard did not make) also means that every
rank runs the same samples, each through its slice of the layers: the engine is told so
(ranks_share_batch), and merges a replicated output once and the slices of a split one (features,
attention heads) into the layer's.
"""
import sys

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

    def __init__(self, model, nodes, group, gradient_snr):
        """nodes: the Audit's [(node id, module)] of `model`; group: its resolved process group
        (None for one process)."""
        dtensor = dtensor_type()
        self._pairs = []     # (parameter, its local tensor when proxied, proxy)
        self._proxy = {}     # id(parameter) -> proxy
        self.options = {}    # engine name -> ParameterShard
        self.share_batch = False  # tensor parallelism: every rank runs the same samples
        if dtensor is None:
            return
        named_params = [(f"{i}.{path}", p) for i, m in nodes for path, p in m.named_parameters()]
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
        # Tensor parallelism: parallelize_module marks the modules it distributed (torch's
        # distribute_module), and leaves DTensors that fully_shard did not make.
        parallel = [(n, p) for n, p in sharded if id(p) not in by_fsdp]
        if parallel or any(getattr(m, "_distribute_module_applied", False) for m in model.modules()):
            # Every rank runs the same samples. With fully_shard too (a 2-D mesh), samples are
            # split along one dimension and layers along the other, which the merge does not
            # tell apart yet.
            name, p = (parallel or sharded)[0]
            if by_fsdp or any(q.device_mesh.ndim > 1 for _, q in sharded):
                raise Error(f"audit: parameter '{name}' is tensor-parallel on a device mesh that also splits the batch "
                            f"(fully_shard, or a mesh of {p.device_mesh.ndim} dimensions): not merged yet; audit "
                            f"tensor parallelism over a 1-D mesh of the whole group, or FSDP2 alone")
            self.share_batch = True
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


def settled(output, node):
    """(output, replaced): a module's output as the engine can read it. A functional collective
    still in flight (torch's AsyncCollectiveTensor: what RowwiseParallel returns before its
    all-reduce is waited on) holds no data yet: it is waited on through a copy that autograd
    tracks, which the forward hook returns in its place, so that the output gradient measured
    is the copy's (one copy of such an output per audited step). A DTensor output has no data of
    its own on a rank: an Error naming the node."""
    first = output[0] if isinstance(output, (tuple, list)) and output else output
    if not isinstance(first, torch.Tensor) or type(first) is torch.Tensor:
        return output, False
    in_flight = getattr(sys.modules.get("torch.distributed._functional_collectives"), "AsyncCollectiveTensor", None)
    if in_flight is not None and isinstance(first, in_flight):
        waited = first.clone()
        if first is output:
            return waited, True
        items = [waited, *output[1:]]
        return (type(output)(*items) if hasattr(output, "_fields") else type(output)(items)), True  # a namedtuple
    dtensor = dtensor_type()
    if dtensor is not None and isinstance(first, dtensor):
        raise Error(f"audit: node '{node}' returned a DTensor, which holds no data of its own on a rank; let its "
                    f"parallel style return local tensors (use_local_output=True, the default)")
    return output, False
