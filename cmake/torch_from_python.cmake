# LibTorch from the Python it is given: the torch wheel installed in GRADSCOPE_PYTHON's
# environment (make passes .venv/bin/python) carries LibTorch's headers, libraries and CMake
# config; building against it is what lets the module import beside that torch, and the C++
# side use the same LibTorch. Sets:
#   GRADSCOPE_TORCH_VERSION   torch.__version__ ("2.13.0+cpu")
#   GRADSCOPE_TORCH_CUDA      torch.version.cuda, empty for a CPU build
#   GRADSCOPE_PYBIND11_FLAGS  the pybind11 ABI flags torch's own extensions build with (empty
#                             from 2.9, whose bundled pybind11 3 needs none)
# and finds Torch (find_package) with C++20 when the torch needs it (2.14 and newer).
# 2.7 is the first release whose PyPI wheels use the C++11 string ABI, the one Debian's C++
# libraries that gradscope links (GoogleTest, fmt, protobuf) are built with; the wheels of 2.5 and
# 2.6 use the old one, and nothing built here could pass a std::string across to them.
set(GRADSCOPE_TORCH_MIN 2.7)

if(NOT GRADSCOPE_PYTHON OR NOT EXISTS ${GRADSCOPE_PYTHON})
  message(FATAL_ERROR "gradscope: no Python to take torch from (GRADSCOPE_PYTHON='${GRADSCOPE_PYTHON}'). "
    "Run `make deps` (it makes .venv), or configure with -DGRADSCOPE_PYTHON=/path/to/venv/bin/python, "
    "or -DGRADSCOPE_BUILD_TORCH=OFF for the run tool alone.")
endif()

execute_process(
  COMMAND ${GRADSCOPE_PYTHON} -c [=[
import torch, torch.utils
try:
    from torch.utils.cpp_extension import _get_pybind11_abi_build_flags as flags
    flags = flags()
except Exception:
    flags = []
print(torch.__version__)
print(torch.utils.cmake_prefix_path)
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.version.cuda or "")
print(";".join(flags))
]=]
  RESULT_VARIABLE torch_rc OUTPUT_VARIABLE torch_out ERROR_VARIABLE torch_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT torch_rc EQUAL 0)
  message(FATAL_ERROR "gradscope: ${GRADSCOPE_PYTHON} cannot import torch:\n${torch_err}\n"
    "Install PyTorch ${GRADSCOPE_TORCH_MIN} or newer into that environment (`make deps` does, "
    "pinned by requirements.txt), or point -DGRADSCOPE_PYTHON at a Python that has it.")
endif()
string(REPLACE "\n" ";" torch_lines "${torch_out}")
list(GET torch_lines 0 GRADSCOPE_TORCH_VERSION)
list(GET torch_lines 1 torch_prefix)
list(GET torch_lines 2 torch_cxx11_abi)
list(LENGTH torch_lines torch_line_count)
set(GRADSCOPE_TORCH_CUDA "")
set(GRADSCOPE_PYBIND11_FLAGS "")
if(torch_line_count GREATER 3)
  list(GET torch_lines 3 GRADSCOPE_TORCH_CUDA)
endif()
if(torch_line_count GREATER 4)
  list(SUBLIST torch_lines 4 -1 GRADSCOPE_PYBIND11_FLAGS)
endif()

string(REGEX MATCH "^[0-9]+\\.[0-9]+(\\.[0-9]+)?" torch_release "${GRADSCOPE_TORCH_VERSION}")
if(torch_release VERSION_LESS GRADSCOPE_TORCH_MIN)
  message(FATAL_ERROR "gradscope: ${GRADSCOPE_PYTHON} has torch ${GRADSCOPE_TORCH_VERSION}; gradscope "
    "builds against torch ${GRADSCOPE_TORCH_MIN} or newer (requirements.txt pins the tested one)")
endif()
if(NOT torch_cxx11_abi EQUAL 1)
  message(FATAL_ERROR "gradscope: torch ${GRADSCOPE_TORCH_VERSION} in ${GRADSCOPE_PYTHON} is built with "
    "the pre-C++11 string ABI (_GLIBCXX_USE_CXX11_ABI=0), which Debian's C++ libraries cannot link "
    "with; use torch ${GRADSCOPE_TORCH_MIN} or newer from PyPI")
endif()
# 2.14's headers use C++20 (concepts); earlier ones compile as C++17, the project's standard.
if(torch_release VERSION_GREATER_EQUAL 2.14 AND CMAKE_CXX_STANDARD LESS 20)
  set(CMAKE_CXX_STANDARD 20)
endif()
if(GRADSCOPE_TORCH_CUDA)
  # A CUDA wheel's TorchConfig finds the CUDA toolkit (nvcc and its libraries) as it loads.
  find_program(GRADSCOPE_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
  if(NOT GRADSCOPE_NVCC)
    message(FATAL_ERROR "gradscope: torch ${GRADSCOPE_TORCH_VERSION} is a CUDA ${GRADSCOPE_TORCH_CUDA} "
      "build, whose CMake config needs the CUDA toolkit: put nvcc on PATH or set CUDA_HOME")
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${GRADSCOPE_NVCC})
  endif()
endif()

list(PREPEND CMAKE_PREFIX_PATH ${torch_prefix})
set(GRADSCOPE_TORCH_PREFIX ${torch_prefix})  # for gradscopeConfig.cmake: consumers find the same

find_package(Torch REQUIRED)
# Installed programs (gradscope-demo) keep the path to the wheel's libraries, which are not in
# the loader's default path as Debian's LibTorch was.
list(APPEND CMAKE_INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib")
if(GRADSCOPE_TORCH_CUDA)
  set(torch_kind "CUDA ${GRADSCOPE_TORCH_CUDA}")
else()
  set(torch_kind "CPU")
endif()
message(STATUS "gradscope: LibTorch ${GRADSCOPE_TORCH_VERSION} (${torch_kind}) from ${GRADSCOPE_PYTHON}, "
  "C++${CMAKE_CXX_STANDARD}")
