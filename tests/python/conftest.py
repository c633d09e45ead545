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
