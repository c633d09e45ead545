"""pip install --no-build-isolation .   (docs/python.md)

Builds the `gradscope` Python package with CMake against the torch of the Python that runs pip
(the module links that torch's LibTorch, so it must be the torch it will import beside), and
installs it; `pip wheel --no-build-isolation .` makes a wheel of it. Build isolation would build
against another torch in a throwaway environment: hence --no-build-isolation.

The CMake build folder: GRADSCOPE_BUILD_DIR when set, else build/pip-<python>-torch<version>
(one a torch, so that another environment's torch never rebuilds this one's). A folder
configured for another torch is refused, naming both. JOBS sets the parallel jobs (default 2).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def torch_version():
    try:
        import torch
    except ImportError:
        sys.exit(f"gradscope: {sys.executable} has no torch; install PyTorch 2.7 or newer into this environment "
                 "first, then pip install --no-build-isolation . (docs/python.md)")
    return torch.__version__


def build_folder(torch):
    given = os.environ.get("GRADSCOPE_BUILD_DIR")
    if given:
        return os.path.abspath(given)
    tag = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(ROOT, "build", f"pip-{tag}-torch{re.sub(r'[^A-Za-z0-9.]+', '_', torch)}")


def built_against(folder):
    """The torch version a configured folder's module was built against, or None."""
    try:
        with open(os.path.join(folder, "python", "gradscope", "_build.py"), encoding="utf-8") as f:
            return re.search(r'TORCH_VERSION = "([^"]*)"', f.read()).group(1)
    except (OSError, AttributeError):
        return None


class CMakeBuildPy(build_py):
    """The package is <build>/python/gradscope, which the gradscope_python target makes."""

    def run(self):
        super().run()
        torch = torch_version()
        build = build_folder(torch)
        configured = os.path.exists(os.path.join(build, "CMakeCache.txt"))
        theirs = built_against(build) if configured else None
        if configured and theirs not in (None, torch):
            sys.exit(f"gradscope: {build} is configured for torch {theirs}, but {sys.executable} has torch {torch}; "
                     "unset GRADSCOPE_BUILD_DIR (a folder a torch is made) or point it at another folder")
        if not configured:
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DGRADSCOPE_PYTHON={sys.executable}", "-DGRADSCOPE_BUILD_TESTS=OFF",
                                   "-DGRADSCOPE_BUILD_BENCH=OFF", "-DGRADSCOPE_FUZZ=OFF",
                                   "-DGRADSCOPE_SANITIZE_TESTS=OFF"])
        subprocess.check_call(["cmake", "--build", build, "--target", "gradscope_python", "-j",
                               os.environ.get("JOBS", "2")])
        shutil.copytree(os.path.join(build, "python", "gradscope"), os.path.join(self.build_lib, "gradscope"),
                        dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds a compiled module: tag it for this platform
        return True


def torch_requirement():
    """The one torch release the module is built for (any local build of it: +cpu, +cu130)."""
    try:
        import torch
    except ImportError:
        return []  # metadata alone; the build says what is missing
    return [f"torch=={torch.__version__.split('+')[0]}"]


setup(
    name="gradscope",
    version="0.1.0",
    description="Training diagnostics for PyTorch: which node is failing, how, since when, with what evidence",
    packages=["gradscope", "gradscope.integrations"],
    package_dir={"gradscope": "python/gradscope"},
    cmdclass={"build_py": CMakeBuildPy},
    distclass=BinaryDistribution,
    python_requires=">=3.10",
    install_requires=torch_requirement(),
    # The frameworks an integration needs (gradscope.integrations.*), at the versions tested.
    extras_require={"lightning": ["lightning>=2.0,<2.7"],
                    "transformers": ["transformers>=4.56,<5.26", "accelerate>=1.1"],
                    "tensorboard": ["tensorboard>=2.12"],
                    "wandb": ["wandb>=0.17,<0.32"],
                    "trees": ["xgboost>=3.0,<3.3", "lightgbm>=4.0,<4.8", "catboost>=1.2,<1.3"]},
)
