"""The package an integration needs, imported with an error that names the extra to install and
the versions the integration was tested with."""
import importlib
import warnings


def require(module, extra, minimum, tested, who=None, below=None):
    """The imported `module`; ImportError naming `extra` when it is missing or older than
    `minimum` (a tuple of ints), the `tested` range in both messages. `who` names what needs it
    (default gradscope.integrations.<extra>; the extra "trees" serves several callbacks). A
    version at or past `below` (the first release not tested) works but warns: a newer release
    may change what gradscope reads, and refusing it would block users for nothing."""
    who = who or f"gradscope.integrations.{extra}"
    try:
        imported = importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{who} needs the '{module}' package ({tested}): "
                          f"pip install 'gradscope[{extra}]' (or pip install {module})") from e
    version = getattr(imported, "__version__", "0")
    if _release(version) < minimum:
        raise ImportError(f"{who} needs {module} {'.'.join(map(str, minimum))} or newer "
                          f"({tested}); this environment has {version}: pip install -U 'gradscope[{extra}]'")
    if below is not None and _release(version) >= below:
        warnings.warn(f"{who}: {module} {version} is newer than the versions tested ({tested}); "
                      f"if its results look wrong, pip install 'gradscope[{extra}]' for a tested one",
                      RuntimeWarning, stacklevel=3)
    return imported


def _release(version):
    """(2, 6, 6) of "2.6.6", "2.6.6.dev0" or "2.6.6+cpu"; (0,) for what it cannot read."""
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or (0,)
