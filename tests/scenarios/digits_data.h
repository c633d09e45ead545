// Where the scenario tests find the real digits (GRADSCOPE_DATA_DIR, else the checkout's data/).
#pragma once

#include <cstdlib>
#include <string>

namespace gradscope::scenarios {

inline std::string digits_path() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/digits.csv";
}

}  // namespace gradscope::scenarios
