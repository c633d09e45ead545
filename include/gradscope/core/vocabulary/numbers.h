// Numbers in the words of a verdict. A premise shows the digits that matter; the evidence
// beside it (and the JSON) keeps every digit.
//
//   shown_number(0.009993087595168836)   // "0.009993"
//   shown_number(216000)                 // "216000" (a whole number in full, not 2.16e+05)
//   versus_threshold(0.00999, 0.01)      // "at the threshold"
//   versus_threshold(3.1545, 2)          // "1.58x the threshold"
#pragma once

#include <string>

namespace gradscope {

/// A double in the shortest text that parses back to the same value ("1e-09", "0.25", "nan").
std::string exact_number(double value);

/// A double with at most four significant digits ("3.155", "0.009993", "1.5e-07"); a whole
/// number below 10^15 in full; "nan", "inf", "-inf".
std::string shown_number(double value);

/// How far `value` lies from `threshold`: "at the threshold" within 1% of it, else the ratio
/// with three significant digits ("1.58x the threshold", "0.1x the threshold"); "" when the
/// threshold is 0 or either is not finite.
std::string versus_threshold(double value, double threshold);

}  // namespace gradscope
