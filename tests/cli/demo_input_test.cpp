// The demo's inputs as a user gives them: a digits.csv too short for a training batch or with
// malformed rows, and options out of range. Each is one line naming the file or the option,
// exit 3 (data) or 2 (usage), never LibTorch's error with its backtrace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Outcome {
  int code;
  std::string out, err;
};

std::string contents(const fs::path& p) {
  std::ostringstream s;
  s << std::ifstream(p, std::ios::binary).rdbuf();
  return s.str();
}

// A fresh folder for one test, removed when the test ends.
class DemoInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradscope-demo-input-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `gradscope demo ARGS --data-dir <dir> --out <dir>/out`, under a time limit.
  Outcome demo(const std::string& args) const {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    const std::string line = "timeout 240 " + std::string(GRADSCOPE_CLI) + " demo " + args + " --data-dir " +
                             dir_.string() + " --out " + (dir_ / "out").string() + " >" + out.string() + " 2>" +
                             err.string() + " </dev/null";
    const int status = std::system(line.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, contents(out), contents(err)};
  }

  // digits.csv of `rows` synthetic images (pixels 0..16, labels 0..9), lines ending `eol`.
  std::string write_digits(int rows, const std::string& eol = "\n") const {
    std::string text;
    for (int r = 0; r < rows; ++r) {
      for (int p = 0; p < 64; ++p) text += std::to_string((r * 7 + p * 3) % 17) + ",";
      text += std::to_string(r % 10) + eol;
    }
    return write(text);
  }
  std::string write(const std::string& text) const {
    std::ofstream(dir_ / "digits.csv", std::ios::binary) << text;
    return (dir_ / "digits.csv").string();
  }
  // One good row, then `bad` as the second line.
  std::string write_bad_second_row(const std::string& bad) const {
    std::string good;
    for (int p = 0; p < 64; ++p) good += "1,";
    return write(good + "3\n" + bad + "\n");
  }

  fs::path dir_;
};

// A line of 64 pixels then the label, with pixel 5 replaced by `pixel` and `tail` after it.
std::string row_with_pixel5(const std::string& pixel, const std::string& tail = "") {
  std::string row;
  for (int p = 0; p < 64; ++p) row += (p == 5 ? pixel : "2") + ",";
  return row + "4" + tail;
}

// 64 rows are one training batch; 20% of the rows are held out for testing.
TEST_F(DemoInput, TooFewRowsToTrainOnExitThreeNamingTheFile) {
  for (int rows : {78, 10, 0}) {
    SCOPED_TRACE(rows);
    const std::string csv = write_digits(rows);
    const Outcome r = demo("--quick --steps 1 --mf-epochs 1");
    EXPECT_EQ(r.code, 3);
    EXPECT_EQ(r.err, "gradscope: error: digits data '" + csv + "': " + std::to_string(rows) +
                         " rows, at least 79 needed (64 to train on, 20% held out for testing)\n");
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(DemoInput, JustEnoughRowsTrainWithWindowsLineEndings) {
  write_digits(79, "\r\n");
  const Outcome r = demo("--quick --steps 1 --mf-epochs 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("gradscope demo --quick: sklearn digits (64 train / 15 test images), 1 Adam steps"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "demo-healthy-mlp" / "report.json"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "demo-mf-digits-pixels" / "report.json"));
}

TEST_F(DemoInput, MalformedRowsExitThreeNamingFileLineAndValue) {
  const struct {
    std::string line, message;
  } cases[] = {
      {row_with_pixel5("nan"), "line 2: pixel 5 is 'nan', not a value in 0..16"},
      {row_with_pixel5("inf"), "line 2: pixel 5 is 'inf', not a value in 0..16"},
      {row_with_pixel5("-1"), "line 2: pixel 5 is '-1', not a value in 0..16"},
      {row_with_pixel5("17"), "line 2: pixel 5 is '17', not a value in 0..16"},
      {row_with_pixel5("1e999"), "line 2: pixel 5 is '1e999', not a value in 0..16"},
      {row_with_pixel5(""), "line 2: '' is not a number"},
      {row_with_pixel5("2", ","), "line 2: expected 65 values, found 66"},  // a trailing comma
      {row_with_pixel5(std::string(100, 'x')), "line 2: '" + std::string(32, 'x') + "...' is not a number"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string csv = write_bad_second_row(c.line);
    const Outcome r = demo("--quick");
    EXPECT_EQ(r.code, 3);
    EXPECT_EQ(r.err, "gradscope: error: digits data '" + csv + "' " + c.message + "\n");
  }
}

TEST_F(DemoInput, TheLargestSeedIsASeed) {
  write_digits(79);
  const Outcome r = demo("--seed 18446744073709551615 --steps 1 --mf-epochs 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(DemoInput, OutOfRangeOptionsExitTwoNamingTheOption) {
  write_digits(80);
  const struct {
    std::string args, message;
  } cases[] = {
      {"--seed -1", "--seed: Value -1 is not a whole number from 0 to 18446744073709551615"},
      {"--seed 18446744073709551616", "--seed: Value 18446744073709551616 is not a whole number from 0 to "
                                      "18446744073709551615"},
      {"--seed 3.5", "--seed: Value 3.5 is not a whole number from 0 to 18446744073709551615"},
      {"--steps -5", "--steps: Value -5 not in range 1 to 100000"},
      {"--mf-epochs 0", "--mf-epochs: Value 0 not in range 1 to 10000"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const Outcome r = demo(c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "gradscope: error: " + c.message + "\nrun 'gradscope --help' for usage\n");
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
