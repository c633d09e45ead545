// What the terminal allows: colour, width, and a progress bar for long work.
//
//   gradscope::HeatmapOptions o;
//   o.color = gradscope::color_enabled();      // a tty and NO_COLOR unset
//   o.width = gradscope::terminal_width();
//   gradscope::ProgressBar bar("reading");     // draws on stderr only when it is a tty
//   bar.update(done, total);  ...  bar.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gradscope {

/// True when stdout is a terminal.
bool stdout_is_terminal();
/// True when stdout is a terminal and NO_COLOR is unset or empty (https://no-color.org).
bool color_enabled();
/// Columns of the terminal on stdout, else $COLUMNS, else `fallback`.
int terminal_width(int fallback = 80);

/// One-line progress bar on stderr, redrawn at most ten times a second; silent when stderr
/// is not a terminal, so logs and CI output stay clean.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  /// `total` < 0 when unknown (then only the count is shown).
  void update(int64_t done, int64_t total);
  /// Erases the bar.
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace gradscope
