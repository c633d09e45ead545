// One threshold of a thresholds struct, declared once by name: the member it is, the range it
// must lie in, and that range in words. The thresholds structs (audit/thresholds.h,
// trees/thresholds.h) keep one table of these; validation, the run's metadata, report.json,
// the tree documents and the Python binding loop over it, so a threshold is never missing
// from one of them.
//
//   for (const auto& f : gradscope::threshold_fields())
//     std::cout << f.name << " = " << f.get(thresholds) << "\n";
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gradscope/core/error.h"

namespace gradscope {

template <class Owner>
struct ThresholdField {
  const char* name;
  double Owner::*real = nullptr;  ///< exactly one of real and integer is set
  int Owner::*integer = nullptr;
  double lo = 0, hi = INFINITY;   ///< the valid range; an open end excludes its bound
  bool lo_open = false, hi_open = false;
  const char* rule = "";          ///< the range in words, for errors: "must be in [0, 1]"

  bool is_integer() const { return integer != nullptr; }
  double get(const Owner& o) const { return real ? o.*real : static_cast<double>(o.*integer); }
  /// Sets the member; an integer field takes `v` as it is (the caller checked it is whole).
  void set(Owner& o, double v) const {
    if (real) o.*real = v;
    else o.*integer = static_cast<int>(v);
  }
  /// Whether `v` lies in the range (NaN and, for an unbounded end, infinity do not).
  bool admits(double v) const {
    if (!std::isfinite(v)) return false;
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
};

/// Throws Error "<what> NAME = VALUE: RULE" for the first field of `fields` out of its range.
template <class Owner>
void validate_fields(const Owner& o, const std::vector<ThresholdField<Owner>>& fields, const char* what) {
  for (const ThresholdField<Owner>& f : fields) {
    const double v = f.get(o);
    if (!f.admits(v))
      throw Error(std::string(what) + " " + f.name + " = " + std::to_string(v) + ": " + f.rule);
  }
}

}  // namespace gradscope
