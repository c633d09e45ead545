#include "tree_test_util.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradscope::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::vector<double>> read_table(const std::string& path) {
  std::istringstream text(read_text(path));
  std::vector<std::vector<double>> rows;
  std::string line;
  for (std::size_t number = 1; std::getline(text, line); ++number) {
    std::vector<double> row;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i == line.size()) break;
      const char* start = line.c_str() + i;
      char* end = nullptr;
      const double v = std::strtod(start, &end);
      if (end == start)
        throw std::runtime_error(path + ": line " + std::to_string(number) + ": not a number");
      row.push_back(v);
      i += static_cast<std::size_t>(end - start);
    }
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gradscope::test
