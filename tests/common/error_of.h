// The message of the gradscope::Error a call throws, for tests that check error text.
#pragma once

#include <string>

#include "gradscope/core/error.h"

namespace gradscope::test {

/// What `f()` threw as gradscope::Error, or "no error" when it returned.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace gradscope::test
