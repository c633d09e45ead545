"""process_group=...: which torch.distributed group an Audit or EmbeddingTracker merges over.

The C++ engine takes torch's own c10d group (the pybind11 object torch.distributed hands out is
cast to it, no copy, no transport of gradscope's own); this module only resolves the spellings
of "the default group", whose errors are clearer here than after the cast.
"""
from ._engine import Error


def resolve_process_group(group, who):
    """None for one process; torch's default group for True or "default"; a ProcessGroup as it
    is. Anything else is an Error naming `who`'s option."""
    if group is None or group is False:
        return None
    import torch.distributed as dist
    if group is True or (isinstance(group, str) and group == "default"):
        if not dist.is_available() or not dist.is_initialized():
            raise Error(f"{who}: process_group={group!r} asks for torch.distributed's default group, but "
                        f"torch.distributed is not initialised; call dist.init_process_group(...) first, or "
                        f"leave process_group=None for one process")
        return dist.distributed_c10d._get_default_group()
    if not dist.is_available() or not isinstance(group, dist.ProcessGroup):
        raise Error(f"{who}: process_group must be a torch.distributed ProcessGroup (dist.new_group(), "
                    f"dist.group.WORLD), True or \"default\" for the default group, or None; got "
                    f"{type(group).__name__}")
    return group
