#include "digits.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "gradscope/core/error.h"

namespace gradscope::cli {
namespace {

constexpr int kPixels = 64;
constexpr double kMaxPixel = 16;

// A field as an error message quotes it: at most 32 bytes, so one bad field of a huge line
// does not become a huge message.
std::string shown(const std::string& field) {
  return field.size() <= 32 ? field : field.substr(0, 32) + "...";
}

// The comma-separated fields of `line`, empty ones included ("1,,2," has four).
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (std::size_t comma; (comma = line.find(',', begin)) != std::string::npos; begin = comma + 1)
    out.push_back(line.substr(begin, comma - begin));
  out.push_back(line.substr(begin));
  return out;
}

}  // namespace

DigitsCsv read_digits_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw Error("cannot open digits data '" + path + "': " + std::strerror(errno) +
                " (run scripts/fetch-data.sh, or pass --data-dir)");
  DigitsCsv csv;
  std::string line;
  for (int64_t row = 1; std::getline(in, line); ++row) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file written on Windows
    if (line.empty()) continue;
    const std::string where = "digits data '" + path + "' line " + std::to_string(row) + ": ";
    const std::vector<std::string> fields = fields_of(line);
    if (fields.size() != kPixels + 1)
      throw Error(where + "expected " + std::to_string(kPixels + 1) + " values, found " +
                  std::to_string(fields.size()));
    std::vector<double> values;
    for (const std::string& field : fields) {
      char* end = nullptr;
      const double v = std::strtod(field.c_str(), &end);
      if (end == field.c_str() || *end != '\0') throw Error(where + "'" + shown(field) + "' is not a number");
      values.push_back(v);
    }
    const double label = values.back();
    if (label < 0 || label > 9 || label != static_cast<int64_t>(label))
      throw Error(where + "label '" + shown(fields.back()) + "' is not a digit");
    // NaN, Inf or a value outside 0..16 would train the demo's models on garbage silently.
    for (int i = 0; i < kPixels; ++i)
      if (!(values[i] >= 0 && values[i] <= kMaxPixel))
        throw Error(where + "pixel " + std::to_string(i) + " is '" + shown(fields[i]) + "', not a value in 0..16");
    for (int i = 0; i < kPixels; ++i) csv.pixels.push_back(static_cast<float>(values[i]));
    csv.labels.push_back(static_cast<int64_t>(label));
  }
  return csv;
}

int64_t digits_rows_needed(int64_t train_rows, double test_fraction) {
  if (!(test_fraction > 0 && test_fraction < 1))
    throw Error("digits data: test fraction " + std::to_string(test_fraction) + " is not in (0, 1)");
  int64_t n = train_rows;
  while (n - std::max<int64_t>(1, static_cast<int64_t>(n * test_fraction)) < train_rows) ++n;
  return n;
}

Digits load_digits(const std::string& path, double test_fraction, uint64_t seed, int64_t min_train_rows) {
  if (!(test_fraction > 0 && test_fraction < 1))
    throw Error("digits data '" + path + "': test fraction " + std::to_string(test_fraction) +
                " is not in (0, 1)");
  if (min_train_rows < 1)
    throw Error("digits data '" + path + "': min_train_rows " + std::to_string(min_train_rows) + " is not >= 1");
  DigitsCsv csv = read_digits_csv(path);
  std::vector<float>& pixels = csv.pixels;
  for (float& v : pixels) v /= 16.0f;
  std::vector<int64_t>& labels = csv.labels;
  const auto n = static_cast<int64_t>(labels.size());
  const int64_t needed = std::max<int64_t>(10, digits_rows_needed(min_train_rows, test_fraction));
  if (n < needed) {
    std::ostringstream held_out;
    held_out << test_fraction * 100;
    throw Error("digits data '" + path + "': " + std::to_string(n) + " rows, at least " + std::to_string(needed) +
                " needed (" + std::to_string(min_train_rows) + " to train on, " + held_out.str() +
                "% held out for testing)");
  }

  at::Tensor x = at::from_blob(pixels.data(), {n, kPixels}, at::kFloat).clone();
  at::Tensor y = at::from_blob(labels.data(), {n}, at::kLong).clone();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor order = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
  x = x.index_select(0, order);
  y = y.index_select(0, order);
  const int64_t n_test = std::max<int64_t>(1, static_cast<int64_t>(n * test_fraction));
  // Standardise each pixel with the training split's mean and std (constant pixels keep
  // std 1). On raw non-negative pixels a freshly initialised ReLU layer leaves 10-30% of its
  // units dead on every input; centred inputs are what a practitioner would feed.
  const at::Tensor train = x.narrow(0, 0, n - n_test);
  const at::Tensor mean = train.mean(0, /*keepdim=*/true);
  at::Tensor std = train.std(0, /*unbiased=*/false, /*keepdim=*/true);
  std = at::where(std > 1e-6, std, at::ones_like(std));
  x = (x - mean) / std;
  return Digits{x.narrow(0, 0, n - n_test), y.narrow(0, 0, n - n_test), x.narrow(0, n - n_test, n_test),
                y.narrow(0, n - n_test, n_test)};
}

}  // namespace gradscope::cli
