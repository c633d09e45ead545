"""The GPU check's tests (scripts/gpu-check.sh runs them; make test never collects this folder,
ctest only globs tests/python/test_*.py): CUDA tensors through gradscope, against plain PyTorch
and against the same work on the CPU.

Without CUDA every test here is skipped, saying "not run: CUDA absent". With
GRADSCOPE_GPU_CHECK_STANDIN=1 they run on CPU tensors instead (gpu-check.sh adds
GRADSCOPE_FORCE_ATEN_STATS=1, which sends CPU tensors through the ATen path a CUDA tensor
takes, and Gloo stands in for NCCL): that checks the tests themselves, never a GPU."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

STANDIN = os.environ.get("GRADSCOPE_GPU_CHECK_STANDIN", "") not in ("", "0")

# float32 matrix products in full float32 on the GPU too (no TF32), so that a CUDA run and a CPU
# run differ only by the order of float32 operations. These are torch's defaults; set anyway.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


@pytest.fixture
def device():
    """The device under test: CUDA, or the CPU in the stand-in run."""
    if STANDIN:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("not run: CUDA absent")
    return torch.device("cuda")
