#include "option_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace gradscope::cli {

CLI::Validator whole_number(const std::string& what, int64_t least, const std::string& name) {
  return CLI::Validator(
      [what, least](std::string& text) -> std::string {
        const std::string limit = std::to_string(std::numeric_limits<int64_t>::max());
        const std::string error = text + " is not " + what + " from " + std::to_string(least) + " to " + limit;
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return error;
        const std::string value = text.substr(std::min(text.find_first_not_of('0'), text.size() - 1));
        if (value.size() > limit.size() || (value.size() == limit.size() && value > limit)) return error;
        if (std::stoll(value) < least) return error;
        text = value;
        return {};
      },
      name);
}

CLI::Validator step_number() { return whole_number("a step", 0, "STEP"); }

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double value = 0;  // read as CLI11 will read it
        if (CLI::detail::lexical_cast(text, value) && value >= lo && value <= hi) return {};
        return fmt::format("{} is not a number from {} to {}", text, lo, hi);
      },
      "NUMBER");
}

}  // namespace gradscope::cli
