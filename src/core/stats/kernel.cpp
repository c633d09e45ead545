#include "gradscope/core/stats/kernel.h"

#include <atomic>
#include <string>

#include "gradscope/core/error.h"
#include "stats/internal/cpu_seam.h"

#if defined(GRADSCOPE_HAVE_AVX2_KERNELS) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace gradscope {
namespace {

std::atomic<bool> pretending_no_avx2{false};

bool cpu_has_avx2() {
#if defined(GRADSCOPE_HAVE_AVX2_KERNELS) && (defined(__GNUC__) || defined(__clang__))
  // F16C from CPUID leaf 1 itself: clang before 16 rejects __builtin_cpu_supports("f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                                __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return available;
#else
  return false;
#endif
}

}  // namespace

namespace internal {
void pretend_no_avx2(bool on) { pretending_no_avx2.store(on, std::memory_order_relaxed); }
}  // namespace internal

bool avx2_available() { return !pretending_no_avx2.load(std::memory_order_relaxed) && cpu_has_avx2(); }

Kernel resolve_kernel(Kernel asked, std::string_view who) {
  switch (asked) {
    case Kernel::kScalar: return Kernel::kScalar;
    case Kernel::kAvx2:
      if (!avx2_available())
        throw Error(std::string(who) + ": avx2 kernel requested but this cpu lacks avx2/fma/f16c");
      return Kernel::kAvx2;
    case Kernel::kAuto: break;
  }
  return avx2_available() ? Kernel::kAvx2 : Kernel::kScalar;
}

}  // namespace gradscope
