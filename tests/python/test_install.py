"""`pip install --no-build-isolation .` and `pip wheel` into fresh virtual environments that hold
the same torch as the build (installed there by pip, from its cache): the installed package
imports from the venv, runs the runnable examples of docs/python.md, and refuses to import
beside another torch, naming both."""
import os
import re
import subprocess
import sys

import pytest
import torch

SOURCE = os.environ.get("GRADSCOPE_SOURCE_DIR", "")
# <build>/python on PYTHONPATH -> <build>, configured for this torch: setup.py reuses it.
BUILD = os.path.dirname(os.path.dirname(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] + "/"))
TORCH = torch.__version__.split("+")[0]


def run(args, **kwargs):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert out.returncode == 0, f"{' '.join(map(str, args))}\n{out.stdout}\n{out.stderr}"
    return out


def fresh_venv(path):
    """A venv without gradscope or the build's PYTHONPATH, holding this torch and setuptools."""
    run([sys.executable, "-m", "venv", path])
    python = path / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"torch=={TORCH}", "setuptools",
         "wheel"])
    return python


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRADSCOPE_BUILD_DIR")}
    env.update(extra)
    return env


def docs_examples():
    with open(os.path.join(SOURCE, "docs", "python.md"), encoding="utf-8") as f:
        return re.findall(r"<!-- runnable -->\n```python\n(.*?)```", f.read(), re.S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    venv = tmp_path_factory.mktemp("install") / "venv"
    python = fresh_venv(venv)
    run([python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", SOURCE],
        env=clean_env(GRADSCOPE_BUILD_DIR=BUILD))
    return venv, python


def test_pip_install_imports_from_the_venv_and_audits(installed, tmp_path):
    venv, python = installed
    script = ("import torch, gradscope\n"
              "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))\n"
              "with gradscope.Audit(m) as a:\n"
              "    m(torch.randn(3, 4)).sum().backward(); a.step(lambda: None)\n"
              "print(gradscope.__file__); print(a.node_ids())\n")
    where, nodes = run([python, "-c", script], env=clean_env(), cwd=tmp_path).stdout.splitlines()
    assert where.startswith(str(venv)) and nodes == "['0', '2']"


@pytest.mark.parametrize("index", range(len(docs_examples())))
def test_docs_examples_run_from_the_installed_package(installed, index, tmp_path):
    _, python = installed
    script = tmp_path / "example.py"
    script.write_text(docs_examples()[index])
    run([python, script], env=clean_env(), cwd=tmp_path)


def test_import_beside_another_torch_names_both(installed, tmp_path):
    venv, python = installed
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    # Another torch, as far as the version check can tell: a stand-in package that says it is
    # 9.9.9 (a real second torch would only fail later, with an undefined symbol).
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("__version__ = '9.9.9'\n")
    out = subprocess.run([str(python), "-c", "import gradscope"], env=clean_env(PYTHONPATH=str(fake)),
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode != 0
    assert f"gradscope was built against torch {torch.__version__}" in out.stderr, out.stderr
    assert "this Python imports torch 9.9.9" in out.stderr, out.stderr
    assert os.path.join(site, "gradscope", "__init__.py") in out.stderr  # the installed one refused


def test_pip_wheel_installs_into_a_fresh_venv_beside_the_same_torch(tmp_path):
    builder = fresh_venv(tmp_path / "builder")
    wheels = tmp_path / "wheels"
    run([builder, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", wheels, SOURCE],
        env=clean_env(GRADSCOPE_BUILD_DIR=BUILD))
    (wheel,) = list(wheels.glob("gradscope-*.whl"))
    assert re.search(r"-cp3\d+-cp3\d+-linux_x86_64\.whl$", wheel.name), wheel.name
    # The wheel names the torch it needs: pip installs it (from its cache) into the new venv.
    target = tmp_path / "target"
    run([sys.executable, "-m", "venv", target])
    python = target / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], env=clean_env())
    out = run([python, "-c", "import torch, gradscope; print(torch.__version__); print(gradscope.__file__)"],
              env=clean_env(), cwd=tmp_path).stdout.splitlines()
    assert out[0].split("+")[0] == TORCH and out[1].startswith(str(target))
