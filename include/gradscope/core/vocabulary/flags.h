// Flags: what a rule concluded about a node, as a set, each with its evidence.
//
//   gradscope::FlagSet f;
//   f.insert(gradscope::Flag::kVanishing);
//   if (f.contains(gradscope::Flag::kVanishing)) std::cout << gradscope::flag_name(...);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/flag_info.h"
#include "gradscope/core/vocabulary/record.h"

namespace gradscope {

/// Upper-case name as printed: "HEALTHY", "VANISHING", "NAN", "NO_DATA", ...
const char* flag_name(Flag flag);

/// Higher is worse: the place of `flag` in kSeverityOrder (flag_info.h); HEALTHY 0.
int flag_severity(Flag flag);

/// What to try first for a node with this flag, one sentence ("" for HEALTHY): the action of
/// its guidance in kFlags.
const char* flag_advice(Flag flag);

/// A small set of flags, iterated in enum order.
class FlagSet {
 public:
  void insert(Flag f) { bits_ |= bit(f); }
  void erase(Flag f) { bits_ &= ~bit(f); }
  bool contains(Flag f) const { return (bits_ & bit(f)) != 0; }
  bool empty() const { return bits_ == 0; }
  /// Whether any flag of `bits` (flag_bits, flag_info.h) is in the set.
  bool contains_any(uint32_t bits) const { return (bits_ & bits) != 0; }
  std::vector<Flag> list() const;
  /// Names joined by `sep`, e.g. "VANISHING,DEAD".
  std::string join(const char* sep = ",") const;
  bool operator==(const FlagSet& o) const { return bits_ == o.bits_; }

 private:
  static uint32_t bit(Flag f) { return uint32_t{1} << static_cast<int>(f); }
  uint32_t bits_ = 0;
};

/// Why a flag was raised: where, since when, the measured value and the threshold it crossed.
struct Evidence {
  Flag flag = Flag::kHealthy;
  Site site = Site::kParamGrad;
  int64_t first_step = -1;  ///< first step whose own value crossed the threshold (-1: none)
  double value = 0;         ///< the value the rule compared
  double threshold = 0;
  std::string measure;      ///< what `value` is, e.g. "mean param_grad L2 over steps"
  std::string detail;       ///< where, when not the node itself: "in: backbone.0, backbone.3"
};

}  // namespace gradscope
