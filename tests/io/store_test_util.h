// Helpers shared by the run store tests: temporary run directories and deterministic records.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "gradscope/core/vocabulary/record.h"

namespace gradscope::test {

/// A fresh, empty directory under the system temp folder, unique to this process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gradscope-store-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Stats that depend only on (step, node index), so a reader can check every field.
inline Stats stats_for(int64_t step, int node) {
  Stats s;
  s.count = 100 + node;
  s.nan = (step + node) % 7 == 0 ? 1 : 0;
  s.pos_inf = (step + node) % 11 == 0 ? 2 : 0;
  s.neg_inf = 0;
  s.finite = s.count - s.nan - s.pos_inf;
  s.zero = node % 3;
  s.saturated = step % 5;
  s.sum = 0.1 * static_cast<double>(step) - node;
  s.sum_sq = 1.0 / (1.0 + static_cast<double>(step) + node);
  s.sum_abs = 3.25 * node + 1e-300;
  s.min = -static_cast<double>(node);
  s.max = static_cast<double>(step);
  s.max_abs = std::max(s.max, -s.min);
  return s;
}

/// Exact (bitwise for doubles) equality of two summaries.
inline bool same_stats(const Stats& a, const Stats& b) {
  return a.count == b.count && a.finite == b.finite && a.nan == b.nan && a.pos_inf == b.pos_inf &&
         a.neg_inf == b.neg_inf && a.zero == b.zero && a.saturated == b.saturated && a.sum == b.sum &&
         a.sum_sq == b.sum_sq && a.sum_abs == b.sum_abs && a.min == b.min && a.max == b.max &&
         a.max_abs == b.max_abs;
}

inline std::string node_name(int node) { return "layer." + std::to_string(node); }

}  // namespace gradscope::test
