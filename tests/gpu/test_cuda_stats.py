"""gradscope.stats of a CUDA tensor (the ATen path, src/torch/aten_stats.cpp, on the tensor's own
device) against torch's own reductions in float64 of the same numbers, and against the fused CPU
kernel on the same tensor copied to the host (docs/devices.md, "The two paths agree")."""
import math

import pytest
import torch

import gradscope
from compare import COUNTS, stats_dict

DEAD_EPS, SATURATION = 1e-7, 50.0
U = 2.0 ** -53  # the unit roundoff of double
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]


def planted(n, dtype, seed):
    """n values: normal ones at a few scales, and at fixed places NaN, +-Inf, zeros, values just
    under dead_eps, above the saturation threshold and at it."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.tensor([1e-3, 1.0, 30.0]).repeat(n // 3 + 1)[:n]
    specials = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-8, -5e-8, 60.0, -1e4, SATURATION, 1e-30]
    for i, v in enumerate(specials):
        if n > 0:
            x[(i * 7919) % n] = v
    return x.to(dtype)


def reference(x):
    """Every field from torch in float64 on the host, written out plainly."""
    d = x.detach().cpu().double().flatten()
    finite = torch.isfinite(d)
    f = d[finite]
    out = dict(count=d.numel(), finite=int(finite.sum()), nan=int(torch.isnan(d).sum()),
               pos_inf=int(torch.isposinf(d).sum()), neg_inf=int(torch.isneginf(d).sum()),
               zero=int((f.abs() <= DEAD_EPS).sum()), saturated=int((f.abs() > SATURATION).sum()),
               sum=float(f.sum()), sum_sq=float((f * f).sum()), sum_abs=float(f.abs().sum()),
               min=float(f.min()) if f.numel() else math.inf, max=float(f.max()) if f.numel() else -math.inf)
    out["max_abs"] = max(0.0, -out["min"], out["max"]) if f.numel() else 0.0
    return out


def assert_stats(got, want, what):
    for k in COUNTS:
        assert got[k] == want[k], (what, k, got[k], want[k])
    for k in ("min", "max", "max_abs"):  # no rounding in a min or max
        assert got[k] == want[k], (what, k, got[k], want[k])
    n = want["finite"]
    # Two summations of the same exact double terms in different orders (Higham 4.2), twice.
    for k, scale in (("sum", want["sum_abs"]), ("sum_abs", want["sum_abs"]), ("sum_sq", want["sum_sq"])):
        assert abs(got[k] - want[k]) <= 2 * max(n, 1) * U * scale, (what, k, got[k], want[k])


def cases(dtype):
    """(name, CPU tensor): the tensor moves to the device as it is (a view stays a view there)."""
    out = [("planted", planted(100_003, dtype, 1)),
           ("one", planted(1, dtype, 2)),
           ("empty", torch.zeros(0, dtype=dtype)),
           ("all_nan", torch.full((1000,), math.nan, dtype=dtype)),
           ("zeros", torch.zeros(4097, dtype=dtype)),
           ("matrix", planted(300 * 257, dtype, 3).view(300, 257))]
    # Over 1 MiB, so the device path reduces it in several chunks (docs/devices.md).
    out.append(("chunked", planted(3_000_017, dtype, 4)))
    return out


def on_device(x, device, name):
    """`x` on the device; the 'matrix' case as a transposed (non-contiguous) view there."""
    t = x.to(device)
    return t.t() if name == "matrix" else t


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
def test_stats_of_a_device_tensor_are_torchs_float64_reductions(device, dtype):
    for name, x in cases(dtype):
        t = on_device(x, device, name)
        assert t.device.type == device.type
        got = stats_dict(gradscope.stats(t, dead_eps=DEAD_EPS, saturation=SATURATION))
        assert_stats(got, reference(t), f"{name} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
def test_stats_of_a_device_tensor_equal_the_fused_cpu_kernels(device, dtype):
    for name, x in cases(dtype):
        t = on_device(x, device, name)
        host = t.cpu()  # the same numbers, the same strides' values, through the CPU kernel
        got = stats_dict(gradscope.stats(t))
        want = stats_dict(gradscope.stats(host))
        assert_stats(got, want, f"{name} {dtype}")


def test_the_planted_cases_hold_what_they_should():
    """The reference is not vacuous: the planted tensor has every kind of element."""
    r = reference(planted(100_003, torch.float32, 1))
    assert r["nan"] == 1 and r["pos_inf"] == 1 and r["neg_inf"] == 1
    assert r["zero"] >= 4 and r["saturated"] >= 2 and r["finite"] == 100_000
