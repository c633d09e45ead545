// What the CLI tests read back from a gradscope process: its exit code and output, and whole
// files it wrote.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gradscope::test {

/// A finished command: its exit code (-1 when it did not exit normally), stdout and stderr.
struct Result {
  int code;
  std::string out, err;
};

/// The bytes of the file `p` ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gradscope::test
