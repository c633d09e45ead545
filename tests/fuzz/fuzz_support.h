// What every fuzz target needs: a private scratch folder for the files an input becomes, and
// quiet standard streams (the code under test prints reports and warnings; libFuzzer's own
// output and sanitizer reports do not go through std::cout or std::cerr, so they still show).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gradscope::fuzz {

/// A folder of its own under $TMPDIR (or /tmp), removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  /// `path()/name`.
  std::string file(const std::string& name) const;
  /// Removes everything in the folder, so no file of one input is left for the next.
  void clear() const;
  /// Writes `size` bytes as `path()/name`, replacing it.
  void write(const std::string& name, const uint8_t* data, std::size_t size) const;

 private:
  std::string path_;
};

/// Sends std::cout and std::cerr nowhere for the rest of the process.
void silence_standard_streams();

/// Each input's time budget: kBudgetFixedSeconds plus kBudgetSecondsPerByte for each of its
/// bytes, some ten times what the instrumented readers take on the largest seeds. Work that
/// grows faster than its input (quadratic parsing of a hostile model took 21 s over 1.5 MB)
/// overruns it long before libFuzzer's 10 s timeout, on inputs small enough to read.
constexpr double kBudgetFixedSeconds = 2.0;
constexpr double kBudgetSecondsPerByte = 2e-6;

/// Aborts (libFuzzer keeps the input as a crash) when `seconds` overran the budget of an input
/// of `size` bytes, saying both.
void check_budget(std::size_t size, double seconds);

/// Runs `fn` on an input of `size` bytes and checks its budget.
template <class F>
void within_budget(std::size_t size, F&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  check_budget(size, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace gradscope::fuzz
