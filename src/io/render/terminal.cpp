#include "gradscope/io/render/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gradscope/io/render/safe_text.h"

namespace gradscope {

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }

bool color_enabled() {
  const char* no_color = std::getenv("NO_COLOR");
  return stdout_is_terminal() && (no_color == nullptr || *no_color == '\0');
}

int terminal_width(int fallback) {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* cols = std::getenv("COLUMNS")) {
    const int n = std::atoi(cols);
    if (n > 0) return n;
  }
  return fallback;
}

// The label names a run path, which may hold anything a file name can.
ProgressBar::ProgressBar(std::string label) : label_(terminal_text(label)), enabled_(isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(int64_t done, int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done != total) return;
  last_ = now;
  drawn_ = true;
  if (total <= 0) {
    std::fprintf(stderr, "\r  %s %lld", label_.c_str(), static_cast<long long>(done));
  } else {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * std::min(done, total) / total);
    std::fprintf(stderr, "\r  %s [%s%s] %lld/%lld", label_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(),
                 static_cast<long long>(done), static_cast<long long>(total));
  }
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace gradscope
