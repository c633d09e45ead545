"""The licence texts Debian ships in /usr/share/common-licenses (package base-files): real
English that every Debian machine has, so the examples need no download."""
import os

LICENSES = "/usr/share/common-licenses"


def licence_text():
    """The texts joined, files in sorted order; symlinks (GPL -> GPL-3, ...) are resolved and a
    real path is read only once, so the text does not depend on how links are laid out."""
    seen, parts = set(), []
    for name in sorted(os.listdir(LICENSES)):
        path = os.path.realpath(os.path.join(LICENSES, name))
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            parts.append(f.read())
    return "".join(parts)
