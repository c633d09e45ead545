// Checks of numeric command-line options that CLI11's own let through: it reads integers with
// strtoll, which clamps 9223372036854775808 to the largest int64 and reads "010" as octal, and
// CLI::Range passes NaN (every comparison with it is false).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace gradscope::cli {

/// Decimal digits naming a whole number from `least` to the largest int64, passed on without
/// leading zeros so CLI11 reads that number; else "<text> is not <what> from <least> to
/// <largest>". `name` is the placeholder shown in --help (e.g. "STEP", "BYTES").
CLI::Validator whole_number(const std::string& what, int64_t least, const std::string& name);

/// A step: whole_number("a step", 0, "STEP").
CLI::Validator step_number();

/// A number from `lo` to `hi` as CLI11 reads it, NaN refused: "<text> is not a number from
/// <lo> to <hi>".
CLI::Validator number_in(double lo, double hi);

}  // namespace gradscope::cli
