"""Per-node scopes: which submodules inside an audited node get their own records.

    audit = gradscope.Audit(model, scopes={
        "encoder": gradscope.NodeScope(patterns=["backbone.*.attn"]),   # fnmatch on paths
        "head": gradscope.NodeScope.none(),                              # the node as a whole
        MyBlock: gradscope.NodeScope(depth=2),                           # every node of this class
    })
    gradscope.register_scope(MyBlock, gradscope.NodeScope(depth=2))      # once, for every audit

Precedence, as in C++: a scope given for the node's id > one given for its class in `scopes` >
one registered for its class > auto (direct children with parameters, descending through
single-child wrappers). Classes match the node's exact type, as C++'s register_scope matches
the dynamic type. The C++ engine resolves the scope on the node's module tree; Python then
hooks every submodule it chose, so a scoped submodule records its activation and output
gradient like a node.
"""
import fnmatch

from torch import nn

from ._engine import Error, NodeScope

_registered = {}


def register_scope(module_class, scope):
    """Declares the scope every node of exactly `module_class` uses (None forgets it)."""
    if not (isinstance(module_class, type) and issubclass(module_class, nn.Module)):
        raise Error(f"register_scope: {module_class!r} is not a torch.nn.Module class")
    if scope is None:
        _registered.pop(module_class, None)
        return
    if not isinstance(scope, NodeScope):
        raise Error(f"register_scope: scope for {module_class.__name__} must be a gradscope.NodeScope, "
                    f"got {type(scope).__name__}")
    _registered[module_class] = scope


def _check_patterns(node_id, module, scope):
    # C++ would scope nothing for a pattern that matches no submodule: almost always a typo
    # (or a node id such as "encoder/backbone.0" where a path relative to the node belongs).
    paths = [path for path, m in module.named_modules()
             if path and next(m.parameters(), None) is not None]
    if not scope.patterns:
        raise Error(f"audit: scope of node '{node_id}': no patterns (use NodeScope.none() to scope nothing)")
    for pattern in scope.patterns:
        if not pattern or not any(fnmatch.fnmatchcase(p, pattern) for p in paths):
            raise Error(f"audit: scope of node '{node_id}': pattern {pattern!r} matches no submodule with "
                        f"parameters (paths are relative to the node, e.g. {paths[:5]})")


def resolve_scopes(nodes, scopes):
    """{node id: NodeScope} for AuditOptions.scopes, from `scopes` (keys: node ids or classes)
    and the registry; nodes with neither are left to the engine's auto scope."""
    by_id, by_class = {}, {}
    for key, scope in (scopes or {}).items():
        name = key.__name__ if isinstance(key, type) else key
        if not isinstance(scope, NodeScope):
            raise Error(f"audit: scope for {name!r} must be a gradscope.NodeScope, got {type(scope).__name__}")
        if isinstance(key, str):
            by_id[key] = scope  # an unknown id is an Error from the engine, with the node ids
        elif isinstance(key, type) and issubclass(key, nn.Module):
            if not any(type(m) is key for _, m in nodes):
                raise Error(f"audit: scope for class {key.__name__}: no node is a {key.__name__} "
                            f"(nodes: {[i for i, _ in nodes]})")
            by_class[key] = scope
        else:
            raise Error(f"audit: scopes are keyed by node id or nn.Module class, got {key!r}")
    resolved = dict(by_id)
    for node_id, module in nodes:
        scope = by_id.get(node_id) or by_class.get(type(module)) or _registered.get(type(module))
        if scope is None:
            continue
        resolved[node_id] = scope
        if scope.mode == "patterns":
            _check_patterns(node_id, module, scope)
    return resolved


def scoped_submodules(nodes, node_ids):
    """[(engine id, submodule)] for the engine's ids "node/path"; the node is the longest id
    that prefixes it (a node id may itself contain '/')."""
    modules = {node_id: dict(m.named_modules()) for node_id, m in nodes}
    out = []
    for engine_id in node_ids:
        owners = [n for n, _ in nodes if engine_id.startswith(n + "/")]
        if not owners or engine_id in modules:
            continue
        node_id = max(owners, key=len)
        path = engine_id[len(node_id) + 1:]
        if path in modules[node_id]:
            out.append((engine_id, modules[node_id][path]))
    return out
