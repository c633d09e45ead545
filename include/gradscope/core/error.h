// Errors: user mistakes and bad input throw gradscope::Error; bugs abort with file:line.
//
//   try { auto s = gradscope::compute(view); }
//   catch (const gradscope::Error& e) { std::cerr << e.what(); }   // "tensor 'w': ..."
//
// NaN and Inf inside tensors are data, never errors.
#pragma once

#include <stdexcept>
#include <string>

namespace gradscope {

/// Thrown for bad input or misuse; the message is lowercase and names the object.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by assert_healthy() when a report has flagged nodes; the message names them.
class HealthError : public Error {
 public:
  using Error::Error;
};

namespace internal {
[[noreturn]] void assert_fail(const char* file, int line, const char* condition);
}  // namespace internal

}  // namespace gradscope

/// Always-on check for bugs (not for user input): aborts with file:line.
#define GRADSCOPE_INTERNAL_ASSERT(cond) \
  ((cond) ? (void)0 : ::gradscope::internal::assert_fail(__FILE__, __LINE__, #cond))
