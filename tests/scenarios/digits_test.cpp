// digits.csv as the demo and the scenarios read it: values, a Windows line ending, the rows a
// training batch needs, and a scenario given too few images.
#include "digits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "../common/error_of.h"
#include "gradscope/core/error.h"
#include "scenario.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;
using test::error_of;

// `rows` images with pixel p of row r = (r + p) % 17 and label r % 10, lines ending `eol`.
std::string write_rows(const std::string& name, int rows, const std::string& eol = "\n") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-digits-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  for (int r = 0; r < rows; ++r) {
    for (int p = 0; p < 64; ++p) out << (r + p) % 17 << ",";
    out << r % 10 << eol;
  }
  return (dir / name).string();
}

TEST(DigitsCsv, ReadsEveryValueAlsoWithWindowsLineEndings) {
  const DigitsCsv csv = read_digits_csv(write_rows("crlf.csv", 3, "\r\n"));
  ASSERT_EQ(csv.labels, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(csv.pixels.size(), 3u * 64);
  EXPECT_EQ(csv.pixels[0], 0.0f);
  EXPECT_EQ(csv.pixels[16], 16.0f);
  EXPECT_EQ(csv.pixels[64 + 16], 0.0f);  // (1 + 16) % 17
  EXPECT_EQ(csv.pixels[2 * 64 + 63], 14.0f);  // (2 + 63) % 17
}

TEST(DigitsCsv, RowsNeededForATrainingSplit) {
  EXPECT_EQ(digits_rows_needed(64, 0.2), 79);  // 79 - floor(15.8) = 64
  EXPECT_EQ(digits_rows_needed(64, 0.5), 127);
  EXPECT_EQ(digits_rows_needed(1, 0.2), 2);  // one row is always held out
  EXPECT_EQ(error_of([] { digits_rows_needed(64, 1.0); }), "digits data: test fraction 1.000000 is not in (0, 1)");
}

TEST(DigitsCsv, TooFewRowsNameTheFileAndJustEnoughSplit) {
  const std::string short_file = write_rows("short.csv", 78);
  EXPECT_EQ(error_of([&] { load_digits(short_file, 0.2, 7, 64); }),
            "digits data '" + short_file + "': 78 rows, at least 79 needed (64 to train on, 20% held out for testing)");
  const std::string tiny = write_rows("tiny.csv", 9);
  EXPECT_EQ(error_of([&] { load_digits(tiny, 0.2, 7); }),
            "digits data '" + tiny + "': 9 rows, at least 10 needed (1 to train on, 20% held out for testing)");
  EXPECT_EQ(error_of([&] { load_digits(tiny, 0, 7); }), "digits data '" + tiny + "': test fraction 0.000000 is not in (0, 1)");
  const Digits d = load_digits(write_rows("enough.csv", 79), 0.2, 7, 64);
  EXPECT_EQ(d.x_train.size(0), 64);
  EXPECT_EQ(d.x_test.size(0), 15);
  EXPECT_EQ(d.y_train.size(0), 64);
}

TEST(DigitsCsv, AScenarioGivenTooFewImagesNamesItself) {
  const Digits d = load_digits(write_rows("ten.csv", 10), 0.2, 7);
  EXPECT_EQ(error_of([&] { scenarios::run_scenario(scenarios::scenario("healthy-mlp"), d, 1, 7); }),
            "scenario 'healthy-mlp': 8 training and 2 test images; it needs a batch of 64 and at least one test image");
  Digits no_test = load_digits(write_rows("enough.csv", 79), 0.2, 7, 64);
  no_test.x_test = at::empty({0, 64});
  no_test.y_test = at::empty({0}, at::kLong);
  EXPECT_EQ(error_of([&] { scenarios::run_scenario(scenarios::scenario("healthy-mlp"), no_test, 1, 7); }),
            "scenario 'healthy-mlp': 64 training and 0 test images; it needs a batch of 64 and at least one test image");
  const Digits enough = load_digits(write_rows("enough.csv", 79), 0.2, 7, 64);
  const scenarios::ScenarioRun run = scenarios::run_scenario(scenarios::scenario("healthy-mlp"), enough, 2, 7);
  EXPECT_EQ(run.report.nodes.at(0).steps, 2);  // the one batch of all 64 training rows, twice
}

}  // namespace
}  // namespace gradscope::cli
