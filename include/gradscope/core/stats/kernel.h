// Which code runs a kernel: the scalar loops or the AVX2 ones. Every kernel (the fused stats
// pass, the attention logits, the fused optimizer passes) asks resolve_kernel() once per call,
// so all of them behave alike on a CPU without AVX2: kAuto falls back to the scalar code, an
// explicit kAvx2 is an Error naming the kernel (asking for it was a claim about the CPU).
//
//   gradscope::StatsOptions o;
//   o.kernel = gradscope::Kernel::kAvx2;          // a benchmark pinning the vector code
//   gradscope::resolve_kernel(o.kernel, "adam");   // kAvx2, or throws "adam: avx2 kernel ..."
#pragma once

#include <cstdint>
#include <string_view>

namespace gradscope {

/// Which kernel computes the pass; kAuto picks the fastest this CPU supports.
enum class Kernel : uint8_t { kAuto, kScalar, kAvx2 };

/// True when this CPU and build can run the AVX2 kernels (AVX2, FMA and F16C).
bool avx2_available();

/// The kernel to run when `asked` is asked for: kScalar as it is; kAuto is kAvx2 when
/// avx2_available(), else kScalar; kAvx2 as it is, or throws Error "WHO: avx2 kernel requested
/// but this cpu lacks avx2/fma/f16c" when it is not available.
Kernel resolve_kernel(Kernel asked, std::string_view who);

}  // namespace gradscope
