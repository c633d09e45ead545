#include "audit/channel_math.h"

#include <ATen/ATen.h>

#include <cmath>

#include "aten_stats.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch::internal {

std::vector<Stats> per_channel_stats(const at::Tensor& x, int64_t dim, const StatsOptions& options) {
  if (dim < 0) dim += x.dim();
  if (dim < 0 || dim >= x.dim())
    throw Error("channel dim " + std::to_string(dim) + " out of range for a tensor with " +
                std::to_string(x.dim()) + " dims");
  if (use_aten_stats(x)) {
    // On its device: every channel in one stacked result, one copy to the host.
    AtenStatsBatch batch(options);
    batch.add_slices(x, dim, "channels");
    return batch.resolve();
  }
  const at::Tensor rows = x.detach().movedim(dim, 0).contiguous();
  const int64_t channels = rows.size(0);
  const int64_t per_row = channels ? rows.numel() / channels : 0;
  const TensorView all = view_of(rows, "channels");
  const auto* base = static_cast<const unsigned char*>(all.data());
  const std::size_t esize = dtype_size(all.dtype());
  std::vector<Stats> out;
  out.reserve(static_cast<std::size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    out.push_back(compute(TensorView::contiguous(base + c * per_row * static_cast<int64_t>(esize),
                                                 all.dtype(), {per_row}, "channel"),
                          options));
  }
  return out;
}

double effective_rank(const at::Tensor& x, int64_t dim) {
  if (dim < 0) dim += x.dim();
  const int64_t channels = x.size(dim);
  if (x.numel() == 0) return std::nan("");  // no samples or no channels: no spectrum
  const at::Tensor m = x.detach().movedim(dim, -1).reshape({-1, channels}).to(at::kDouble);
  if (!m.isfinite().all().item<bool>()) return std::nan("");  // NaN/Inf are flagged elsewhere
  // The squared singular values are the eigenvalues of the smaller Gram matrix (m m^T or
  // m^T m): one matrix product and a symmetric eigensolve, about 4x faster than svdvals on a
  // [256, 1024] activation (bidiagonalisation is bound by matrix-vector products). Squaring
  // costs precision only at the bottom of the spectrum: a singular value below about
  // sqrt(eps) ~ 1e-8 of the largest reads as zero, which moves the entropy by less than 1e-5
  // relative (tests/torch/channel_math_test.cpp checks against svdvals).
  return effective_rank_of_gram(m.size(0) <= m.size(1) ? m.mm(m.t()) : m.t().mm(m));
}

double effective_rank_of_gram(const at::Tensor& gram) {
  if (gram.numel() == 0) return std::nan("");
  const at::Tensor eig = at::linalg_eigvalsh(gram.to(at::kDouble));
  // Eigenvalues within rounding of zero (LAPACK's rank tolerance, size x eps x the largest)
  // are zero: their square roots, about 1e-8 of the largest singular value, would be rounding
  // noise that differs between two routes to the same spectrum (this Gram, the other one, or
  // a sum of per-rank Grams, distributed/spectra.h), moving the entropy by up to 1e-6.
  // Kept on the tensor's device: no host read for it (docs/devices.md counts them).
  const at::Tensor tolerance = eig.max() * (static_cast<double>(gram.size(0)) * 2.220446049250313e-16);
  const at::Tensor s = at::where(eig > tolerance, eig, at::zeros_like(eig)).sqrt();
  const double total = s.sum().item<double>();
  if (!(total > 0)) return std::nan("");
  const at::Tensor p = s / total;
  const at::Tensor nz = p.masked_select(p > 0);
  return std::exp(-(nz * nz.log()).sum().item<double>());
}

double linear_cka(const at::Tensor& x, const at::Tensor& y) {
  if (x.size(0) != y.size(0))
    throw Error("linear cka: " + std::to_string(x.size(0)) + " vs " + std::to_string(y.size(0)) +
                " samples");
  auto centred = [](const at::Tensor& t) {
    const at::Tensor m = t.detach().reshape({t.size(0), -1}).to(at::kDouble);
    return m - m.mean(0, /*keepdim=*/true);
  };
  const at::Tensor a = centred(x), b = centred(y);
  if (!a.isfinite().all().item<bool>() || !b.isfinite().all().item<bool>()) return std::nan("");
  // Gram form when there are fewer samples than features; the same value either way.
  double cross, self_a, self_b;
  if (a.size(0) <= std::min(a.size(1), b.size(1))) {
    const at::Tensor k = a.mm(a.t()), l = b.mm(b.t());
    cross = (k * l).sum().item<double>();
    self_a = k.pow(2).sum().item<double>();
    self_b = l.pow(2).sum().item<double>();
  } else {
    cross = b.t().mm(a).pow(2).sum().item<double>();
    self_a = a.t().mm(a).pow(2).sum().item<double>();
    self_b = b.t().mm(b).pow(2).sum().item<double>();
  }
  if (!(self_a > 0) || !(self_b > 0)) return std::nan("");
  return cross / std::sqrt(self_a * self_b);
}

}  // namespace gradscope::torch::internal
