#include "gradscope/trees/data_files.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string_view>

#include "gradscope/core/error.h"
#include "internal/regular_file.h"

namespace gradscope {
namespace {

std::string read_file(const std::string& path) {
  std::optional<std::string> text;
  try {
    text = internal::read_regular_file(path, kMaxDataFileBytes);
  } catch (const Error& e) {
    throw Error("data file '" + path + "': " + e.what());
  }
  if (!text) throw Error("data file '" + path + "': no such file");
  return std::move(*text);
}

// Lines without their end (\n or \r\n), blank lines dropped, each with its 1-based number.
std::vector<std::pair<std::size_t, std::string_view>> lines_of(const std::string& text) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t start = 0, number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) out.emplace_back(number, line);
  }
  return out;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    std::string_view f = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
    out.push_back(f);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

bool is_missing(std::string_view f) {
  return f.empty() || f == "NA" || f == "NaN" || f == "nan" || f == "null";
}

bool parses_as_number(std::string_view f) {
  const std::string s(f);
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

double number(std::string_view f, const std::string& path, std::size_t line,
              const std::string& column) {
  if (is_missing(f)) return std::numeric_limits<double>::quiet_NaN();
  const std::string s(f);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  // ERANGE also marks underflow; a denormal or zero result is a number all the same.
  const bool overflow = errno == ERANGE && std::fabs(v) > 1;
  if (end != s.c_str() + s.size() || overflow || !std::isfinite(v))
    throw Error("data file '" + path + "': line " + std::to_string(line) + ", column '" + column +
                "': \"" + s.substr(0, 32) + "\" is not a finite number");
  return v;
}

}  // namespace

TreeData read_csv_data(const std::string& path, const std::string& label) {
  const std::string text = read_file(path);
  const auto lines = lines_of(text);
  if (lines.empty())
    throw Error("data file '" + path + "': empty (a header row of column names is needed)");
  const auto header = fields(lines[0].second);
  std::size_t label_col = header.size();
  TreeData d;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (!label.empty() && header[c] == label) {
      if (label_col != header.size())
        throw Error("data file '" + path + "': label column '" + label + "' appears twice");
      label_col = c;
    } else {
      d.names.emplace_back(header[c]);
    }
  }
  if (!label.empty() && label_col == header.size())
    throw Error("data file '" + path + "': no column named '" + label +
                "' (line 1 names the columns)");
  d.cols = d.names.size();
  d.rows = lines.size() - 1;
  d.x.reserve(d.rows * d.cols);
  if (!label.empty()) d.y.reserve(d.rows);
  for (std::size_t r = 1; r < lines.size(); ++r) {
    const auto [number_of_line, line] = lines[r];
    const auto f = fields(line);
    if (f.size() != header.size())
      throw Error("data file '" + path + "': line " + std::to_string(number_of_line) + ": " +
                  std::to_string(f.size()) + " fields, the header has " +
                  std::to_string(header.size()));
    for (std::size_t c = 0; c < f.size(); ++c) {
      const double v = number(f[c], path, number_of_line, std::string(header[c]));
      if (c == label_col) {
        if (std::isnan(v))
          throw Error("data file '" + path + "': line " + std::to_string(number_of_line) +
                      ": no label");
        d.y.push_back(v);
      } else {
        d.x.push_back(v);
      }
    }
  }
  return d;
}

TreeData read_sklearn_csv(const std::string& path) {
  const std::string text = read_file(path);
  auto lines = lines_of(text);
  if (lines.size() >= 2 && fields(lines[0].second).size() < fields(lines[1].second).size())
    lines.erase(lines.begin());
  if (lines.empty()) throw Error("data file '" + path + "': no rows");
  TreeData d;
  const auto first = fields(lines[0].second);
  const std::size_t width = first.size();
  if (width < 2) throw Error("data file '" + path + "': rows need features and a label");
  d.cols = width - 1;
  // A first row with a cell that is not a number names the columns (diabetes.csv:
  // "age,sex,...,target"); the others have none, and their columns become f0, f1, ...
  const bool named = std::any_of(first.begin(), first.end(), [](std::string_view f) {
    return !is_missing(f) && !parses_as_number(f);
  });
  for (std::size_t c = 0; c < d.cols; ++c)
    d.names.push_back(named ? std::string(first[c]) : "f" + std::to_string(c));
  if (named) lines.erase(lines.begin());
  d.rows = lines.size();
  for (const auto& [n, line] : lines) {
    const auto f = fields(line);
    if (f.size() != width)
      throw Error("data file '" + path + "': line " + std::to_string(n) + ": " +
                  std::to_string(f.size()) + " fields, expected " + std::to_string(width));
    for (std::size_t c = 0; c + 1 < width; ++c) d.x.push_back(number(f[c], path, n, d.names[c]));
    d.y.push_back(number(f.back(), path, n, "label"));
    if (std::isnan(d.y.back()))
      throw Error("data file '" + path + "': line " + std::to_string(n) + ": no label");
  }
  return d;
}

void write_csv_data(const std::string& path, const TreeData& data, const std::string& label) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("data file '" + path + "': cannot write");
  for (std::size_t c = 0; c < data.cols; ++c)
    out << (c ? "," : "") << (c < data.names.size() ? data.names[c] : "f" + std::to_string(c));
  if (data.labelled()) out << (data.cols ? "," : "") << label;
  out << "\n";
  char buf[32];
  auto put = [&](double v) {
    if (std::isnan(v)) return;  // an empty cell
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out << buf;
  };
  for (std::size_t r = 0; r < data.rows; ++r) {
    for (std::size_t c = 0; c < data.cols; ++c) {
      if (c) out << ",";
      put(data.row(r)[c]);
    }
    if (data.labelled()) {
      if (data.cols) out << ",";
      put(data.y[r]);
    }
    out << "\n";
  }
  out.close();
  if (!out) throw Error("data file '" + path + "': write failed");
}

}  // namespace gradscope
