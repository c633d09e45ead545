// Tests only: makes avx2_available() answer false on a CPU that has AVX2, so that what every
// kernel does on a CPU without it (resolve_kernel, stats/kernel.h) is checked on the machines
// the tests run on. Not for use while kernels run on other threads.
#pragma once

namespace gradscope::internal {

/// While `on`, avx2_available() returns false.
void pretend_no_avx2(bool on);

}  // namespace gradscope::internal
