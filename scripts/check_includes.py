#!/usr/bin/env python3
"""The include graph of include/ and src/ against the layers of docs/architecture.md: every
`#include "gradscope/..."` and every private include (`#include "audit/state.h"`, resolved from
the layer's folder in src) goes from a folder to one of lower rank, never up and never to a
folder that includes it back. Prints each arrow that breaks the order, with a file that makes it;
exits 1 when there is one.

    scripts/check_includes.py [checkout]        # default: the checkout holding this script

Folders: the layers (core, io, trees, tensorboard, torch, scenarios, cli, demo) and, inside core,
its domains. A header at core's root (error.h, the field tables) belongs to core/base.
"""
import os
import re
import sys

# Lower rank first: a folder may include its own files and folders of lower rank only.
RANK = {
    "core/base": 0,
    "core/stats": 1,
    "core/vocabulary": 2,
    "core/series": 3,
    "core/attention": 4, "core/embedding": 4, "core/trees": 4, "core/optim": 4,
    "core/compress": 5,
    "core/audit": 6,
    "core/findings": 7,
    "io": 10,
    "trees": 11, "tensorboard": 11, "torch": 11,
    "scenarios": 12,
    "cli": 13, "demo": 13,
}
_INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    """The folder (a key of RANK) of a path below include/gradscope or src, or None."""
    parts = path.split("/")
    if not parts or parts[0] not in {k.split("/")[0] for k in RANK}:
        return None
    if parts[0] == "core":
        return "core/" + parts[1] if len(parts) > 2 else "core/base"
    return parts[0]


def arrows(root):
    """{(from folder, to folder): a file making the arrow} over every .h and .cpp."""
    found = {}
    for base in ("include/gradscope", "src"):
        for folder, _, files in os.walk(os.path.join(root, base)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(folder, name)
                source = folder_of(os.path.relpath(path, os.path.join(root, base)))
                if source is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = _INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if target.startswith("gradscope/"):
                            target = target[len("gradscope/"):]
                        elif os.path.exists(os.path.join(folder, target)):  # beside the file
                            target = os.path.relpath(os.path.join(folder, target), os.path.join(root, "src"))
                        else:  # private: from the layer's folder in src
                            target = source.split("/")[0] + "/" + target
                        to = folder_of(target)
                        if to is not None and to != source:
                            found.setdefault((source, to), os.path.relpath(path, root) + ": " + m.group(1))
    return found


def broken(found):
    """The arrows that go up or to a folder including back, each with why."""
    out = []
    for (a, b), where in sorted(found.items()):
        if (b, a) in found and a < b:
            out.append(f"{a} and {b} include each other ({where}; {found[(b, a)]})")
        if RANK[b] >= RANK[a]:
            out.append(f"{a} (rank {RANK[a]}) includes {b} (rank {RANK[b]}): {where}")
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = broken(arrows(root))
    for p in problems:
        print(p)
    print(f"check_includes: {len(problems)} arrow(s) against the layers" if problems else
          "check_includes: every include goes down the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
