"""docs/agent-json.md's table of finding kinds names every kind and every type the code has: the
list comes from the gradscope command itself (the error `diff --fail-on` gives for a type it does
not know lists each kind's types, from core/findings/kinds.h), so a new flag, tree flag or kind
that the table leaves out fails here."""
import os
import re
import subprocess


def types_by_kind():
    """{kind: [types]} as `gradscope diff --fail-on` lists them."""
    run = subprocess.run([os.environ["GRADSCOPE_CLI"], "diff", "--fail-on", "NOT_A_TYPE", "a", "b"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    listed = re.search(r"types by kind: (.*)\)", run.stderr).group(1)
    out = {}
    for part in listed.split("; "):
        kind, types = part.split(": ")
        out[kind] = types.split()
    return out


def table_rows():
    """{kind: the table row's text} of the kinds table in docs/agent-json.md."""
    path = os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "docs", "agent-json.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", text, re.M)}


def test_the_command_lists_every_kind():
    kinds = types_by_kind()
    assert set(kinds) == {"module", "flow", "embedding", "trees", "loss_scale", "loss"}
    assert "DEPTH_GRADIENT_IMBALANCE" in kinds["module"] and "LOSS_SPIKE" in kinds["loss"]


def test_the_table_names_every_kind_and_type():
    rows = table_rows()
    missing = [f"{kind}: {t}" for kind, types in types_by_kind().items()
               for t in (types if kind in rows else ["(the kind's row)"])
               if kind not in rows or f"`{t}`" not in rows[kind]]
    assert not missing, "docs/agent-json.md's kinds table leaves out " + ", ".join(missing)
