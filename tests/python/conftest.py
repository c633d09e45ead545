"""Shared fixtures of the Python tests. ctest sets PYTHONPATH to <build>/python and names the
C++ reference program. A missing torch or module fails the run (CI or not): no test skips."""
import json
import os
import subprocess

import pytest

try:
    import torch  # noqa: F401
    import gradscope  # noqa: F401
except ImportError as e:  # a failure, never a skip (also outside CI)
    raise ImportError(f"torch or the gradscope module is missing ({e}): run make test, which makes .venv with "
                      f"the torch of requirements.txt and builds <build>/python/gradscope") from e

def _env_path(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail(f"{name} is not set (ctest sets it; run the tests through make test)")
    return path


@pytest.fixture(scope="session")
def cpp_reference():
    return _env_path("GRADSCOPE_CPP_REFERENCE")


@pytest.fixture(scope="session")
def gradscope_cli():
    return _env_path("GRADSCOPE_CLI")


@pytest.fixture(scope="session")
def digits_csv():
    data = os.environ.get("GRADSCOPE_DATA_DIR") or os.environ.get("GRADSCOPE_DEFAULT_DATA_DIR", "data")
    path = os.path.join(data, "digits.csv")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run scripts/fetch-data.sh (make test does)")
    return path


def run_json(args):
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def world_of_one(tmp_path):
    """torch.distributed in this process, a group of one rank (Gloo), torn down after the test."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + str(tmp_path / "store"), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def run_docs_example(marker, ranks, tmp_path, timeout=150):
    """Runs the python block after <!-- MARKER --> in docs/distributed.md with torchrun on
    `ranks` processes in tmp_path, and checks that every `print(...)  # VALUE` printed VALUE
    (a closing " (remark)" is prose)."""
    import re
    import socket
    import sys
    with open(os.path.join(os.environ.get("GRADSCOPE_SOURCE_DIR", "."), "docs", "distributed.md"), encoding="utf-8") as f:
        code = re.search(r"<!-- " + marker + r" -->\n```python\n(.*?)```", f.read(), re.S).group(1)
    (tmp_path / "example.py").write_text(code)
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    paths = os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
                           "--master-addr", "127.0.0.1", "--master-port", str(port), "example.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=paths))
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    for want in re.findall(r"^\s*print\(.*\)\s+# (.+?)(?: \(.*\))?$", code, re.M):
        assert want in printed, (want, printed)
