#include "gradscope/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace gradscope::internal {

void assert_fail(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "gradscope: internal error at %s:%d: %s\n", file, line, condition);
  std::abort();
}

}  // namespace gradscope::internal
