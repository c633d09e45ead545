"""pip install --no-build-isolation --no-index .   (docs/python.md)

Builds the `gradscope` Python package with CMake (the module links the C++ engine) and
installs it: offline, with Debian's setuptools, into the Python that runs pip (a virtual
environment made with --system-site-packages finds Debian's torch). GRADSCOPE_BUILD_DIR picks
the CMake build folder (default ./build); JOBS the parallel jobs (default 2).
"""
import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("GRADSCOPE_BUILD_DIR", os.path.join(ROOT, "build")))


class CMakeBuildPy(build_py):
    """The package is <build>/python/gradscope, which the gradscope_python target makes."""

    def run(self):
        super().run()
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", BUILD, "--target", "gradscope_python", "-j",
                               os.environ.get("JOBS", "2")])
        shutil.copytree(os.path.join(BUILD, "python", "gradscope"), os.path.join(self.build_lib, "gradscope"),
                        dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds a compiled module: tag it for this platform
        return True


setup(
    name="gradscope",
    version="0.1.0",
    description="Training diagnostics for PyTorch: which node is failing, how, since when, with what evidence",
    packages=["gradscope"],
    package_dir={"gradscope": "python/gradscope"},
    cmdclass={"build_py": CMakeBuildPy},
    distclass=BinaryDistribution,
    python_requires=">=3.9",
)
