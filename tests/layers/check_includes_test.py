#!/usr/bin/env python3
"""scripts/check_includes.py on planted trees: an include up the layers or across layers, two domain
folders that include each other and two of one rank are each named; a tree in order passes.

    tests/layers/check_includes_test.py scripts/check_includes.py
"""
import os
import subprocess
import sys
import tempfile


def write(root, path, *includes):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write("#pragma once\n" + "".join(f'#include "{i}"\n' for i in includes))


def check(script, files):
    """(exit code, output) of the checker over a tree holding `files` ({path: [includes]})."""
    with tempfile.TemporaryDirectory() as root:
        for path, includes in files.items():
            write(root, path, *includes)
        run = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
        return run.returncode, run.stdout


def main(script):
    in_order = {
        "include/gradscope/core/stats/stats.h": [],
        "include/gradscope/core/vocabulary/record.h": ["gradscope/core/stats/stats.h"],
        "include/gradscope/core/audit/report.h": ["gradscope/core/vocabulary/record.h"],
        "src/io/store/writer.cpp": ["gradscope/core/audit/report.h", "store/internal/codec.h"],
        "src/io/store/internal/codec.h": [],
    }
    failures = []

    def expect(name, files, code, *phrases):
        got, out = check(script, files)
        missing = [p for p in phrases if p not in out]
        if got != code or missing:
            failures.append(f"{name}: exit {got} (wanted {code}), missing {missing} in:\n{out}")

    expect("in order", in_order, 0, "every include goes down the layers")
    expect("up", {**in_order, "include/gradscope/core/stats/kernel.h": ["gradscope/core/audit/report.h"]}, 1,
           "core/stats (rank 1) includes core/audit (rank 6)", "include/gradscope/core/stats/kernel.h")
    expect("each other", {**in_order,
                          "include/gradscope/core/trees/a.h": ["gradscope/core/embedding/b.h"],
                          "include/gradscope/core/embedding/b.h": ["gradscope/core/trees/c.h"]}, 1,
           "core/embedding and core/trees include each other")
    expect("same rank", {**in_order, "include/gradscope/core/trees/a.h": ["gradscope/core/embedding/b.h"]}, 1,
           "core/trees (rank 4) includes core/embedding (rank 4)")
    expect("io into torch", {**in_order, "src/io/render/x.cpp": ["gradscope/torch/tensor.h"]}, 1,
           "io (rank 10) includes torch (rank 11)")
    expect("layer up", {**in_order, "src/core/audit/y.cpp": ["gradscope/io/store/writer.h"]}, 1,
           "core/audit (rank 6) includes io (rank 10)")
    for f in failures:
        print("FAIL", f)
    print(f"check_includes_test: {6 - len(failures)} of 6 cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
