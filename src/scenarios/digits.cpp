#include "digits.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "gradscope/core/error.h"

namespace gradscope::cli {
namespace {

constexpr int kPixels = 64;

}  // namespace

DigitsCsv read_digits_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw Error("cannot open digits data '" + path + "': " + std::strerror(errno) +
                " (run scripts/fetch-data.sh, or pass --data-dir)");
  DigitsCsv csv;
  std::string line;
  for (int64_t row = 1; std::getline(in, line); ++row) {
    if (line.empty()) continue;
    std::stringstream fields(line);
    std::string field;
    std::vector<double> values;
    while (std::getline(fields, field, ',')) {
      char* end = nullptr;
      const double v = std::strtod(field.c_str(), &end);
      if (end == field.c_str() || *end != '\0')
        throw Error("digits data '" + path + "' line " + std::to_string(row) + ": '" + field +
                    "' is not a number");
      values.push_back(v);
    }
    if (values.size() != kPixels + 1)
      throw Error("digits data '" + path + "' line " + std::to_string(row) + ": expected " +
                  std::to_string(kPixels + 1) + " values, found " + std::to_string(values.size()));
    const double label = values.back();
    if (label < 0 || label > 9 || label != static_cast<int64_t>(label))
      throw Error("digits data '" + path + "' line " + std::to_string(row) + ": label " +
                  std::to_string(label) + " is not a digit");
    for (int i = 0; i < kPixels; ++i) csv.pixels.push_back(static_cast<float>(values[i]));
    csv.labels.push_back(static_cast<int64_t>(label));
  }
  return csv;
}

Digits load_digits(const std::string& path, double test_fraction, uint64_t seed) {
  DigitsCsv csv = read_digits_csv(path);
  std::vector<float>& pixels = csv.pixels;
  for (float& v : pixels) v /= 16.0f;
  std::vector<int64_t>& labels = csv.labels;
  const auto n = static_cast<int64_t>(labels.size());
  if (n < 10) throw Error("digits data '" + path + "': only " + std::to_string(n) + " rows");

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
