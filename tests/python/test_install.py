"""`pip install .` (offline, no build isolation) into a clean venv with --system-site-packages:
the installed package imports from the venv and audits a model."""
import os
import subprocess
import sys


def test_pip_install_into_a_clean_venv(tmp_path):
    source = os.environ["GRADSCOPE_SOURCE_DIR"]
    build = os.path.dirname(os.path.dirname(os.environ["PYTHONPATH"].split(os.pathsep)[0] + "/"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["GRADSCOPE_BUILD_DIR"] = build
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                          "--no-deps", "-q", source], env=env, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    script = ("import torch, gradscope\n"
              "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))\n"
              "with gradscope.Audit(m) as a:\n"
              "    m(torch.randn(3, 4)).sum().backward(); a.step(lambda: None)\n"
              "print(gradscope.__file__); print(a.node_ids())\n")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script], env=env, cwd=tmp_path, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    where, nodes = out.stdout.splitlines()
    assert where.startswith(str(venv)) and nodes == "['0', '2']"
