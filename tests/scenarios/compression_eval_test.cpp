// Fashion-MNIST's IDX reader on hand-made files (good and damaged), and the compression
// comparison on the real digits: every method measured at its baseline's size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "../common/error_of.h"
#include "../common/require_data.h"
#include "compression_eval.h"
#include "fashion_mnist.h"

namespace gradscope::scenarios {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

std::string data_dir() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return env ? env : GRADSCOPE_DEFAULT_DATA_DIR;
}

void write_idx(const fs::path& path, int ndim, const std::vector<int>& dims, const std::vector<uint8_t>& data,
               int type = 0x08) {
  std::ofstream out(path, std::ios::binary);
  const unsigned char magic[4] = {0, 0, static_cast<unsigned char>(type), static_cast<unsigned char>(ndim)};
  out.write(reinterpret_cast<const char*>(magic), 4);
  for (int d : dims) {
    const unsigned char b[4] = {static_cast<unsigned char>(d >> 24), static_cast<unsigned char>(d >> 16),
                                static_cast<unsigned char>(d >> 8), static_cast<unsigned char>(d)};
    out.write(reinterpret_cast<const char*>(b), 4);
  }
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

TEST(FashionIdx, ReadsAndRefusesDamage) {
  const fs::path dir = fs::temp_directory_path() / ("gs-idx-" + std::to_string(getpid()));
  fs::create_directories(dir);
  write_idx(dir / "ok", 2, {2, 3}, {1, 2, 3, 4, 5, 255});
  const Idx idx = read_idx((dir / "ok").string());
  EXPECT_EQ(idx.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(idx.data.back(), 255);
  write_idx(dir / "short", 2, {2, 3}, {1, 2, 3});
  EXPECT_THAT(error_of([&] { read_idx((dir / "short").string()); }), HasSubstr("3 of 6 data bytes"));
  write_idx(dir / "long", 1, {2}, {1, 2, 3});
  EXPECT_THAT(error_of([&] { read_idx((dir / "long").string()); }), HasSubstr("bytes after the data"));
  write_idx(dir / "float", 1, {2}, {1, 2}, 0x0d);
  EXPECT_THAT(error_of([&] { read_idx((dir / "float").string()); }), HasSubstr("is not unsigned-byte IDX"));
  write_idx(dir / "zero", 1, {0}, {});
  EXPECT_THAT(error_of([&] { read_idx((dir / "zero").string()); }), HasSubstr("dimension 0 is out of range"));
  std::ofstream(dir / "tiny") << "ab";
  EXPECT_THAT(error_of([&] { read_idx((dir / "tiny").string()); }), HasSubstr("truncated header"));
  EXPECT_THAT(error_of([&] { read_idx((dir / "missing").string()); }), HasSubstr("scripts/fetch-data.sh fashion-mnist"));
  // A label outside 0..9 in an otherwise valid set.
  write_idx(dir / "train-images-idx3-ubyte", 3, {1, 28, 28}, std::vector<uint8_t>(784, 7));
  write_idx(dir / "train-labels-idx1-ubyte", 1, {1}, {10});
  EXPECT_THAT(error_of([&] { load_fashion_mnist(dir.string(), 0, 1); }), HasSubstr("label 10 is not 0..9"));
  write_idx(dir / "train-labels-idx1-ubyte", 1, {2}, {1, 2});
  EXPECT_THAT(error_of([&] { load_fashion_mnist(dir.string(), 0, 1); }), HasSubstr("2 labels for 1 images"));
  fs::remove_all(dir);
}

TEST(FashionIdx, TheRealDataLoads) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/fashion-mnist/train-images-idx3-ubyte");
  const cli::Digits d = load_fashion_mnist(data_dir() + "/fashion-mnist", 1000, 3);
  EXPECT_EQ(d.x_train.sizes().vec(), (std::vector<int64_t>{1000, 784}));
  EXPECT_EQ(d.x_test.size(0), 10000);
  EXPECT_NEAR(d.x_train.mean().item<double>(), 0.0, 1e-4);
  EXPECT_EQ(d.y_test.max().item<int64_t>(), 9);
}

TEST(CompressionEval, EveryMethodIsMeasuredAtItsBaselinesSize) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const cli::Digits data = cli::load_digits(data_dir() + "/digits.csv", 0.25, 1, kScenarioBatch);
  CompressionTask task = digits_mlp_task();
  task.steps = 60;
  Trained t = train_for_compression(task, data, 1);
  EXPECT_GT(t.accuracy, 0.5);
  ASSERT_EQ(t.profiles.size(), 3u);
  const std::vector<Measured> all = compare_methods(t, data);
  // At each of four sizes: uniform and the recipe each rounded to nearest and by GPTQ, the
  // recipe's three ablations, magnitude (FP32 and INT8); at INT4's also int8-top-pruned.
  ASSERT_EQ(all.size(), 4u * 9 + 1);
  std::map<std::string, int64_t> uniform;
  for (const Measured& m : all)
    if (m.method.rfind("uniform-", 0) == 0 && m.method.find("gptq") == std::string::npos) uniform[m.budget] = m.bytes;
  // GPTQ stores the same codes and scales: the same bytes as rounding to nearest.
  for (const Measured& m : all) {
    if (m.method.rfind("uniform-", 0) == 0 && m.method.find("-gptq") != std::string::npos) {
      EXPECT_EQ(m.bytes, uniform[m.budget]);
    }
  }
  // Uniform sizes by hand: 6464 weights, 106 units with a scale and an FP16 bias each.
  EXPECT_EQ(uniform["int8"], 6464 + 106 * 6);
  EXPECT_EQ(uniform["int4"], 3232 + 106 * 6);
  EXPECT_EQ(uniform["int3"], 2424 + 106 * 6);
  EXPECT_EQ(uniform["int2"], 1616 + 106 * 6);
  for (const Measured& m : all) {
    SCOPED_TRACE(m.method + " at " + m.budget);
    ASSERT_TRUE(uniform.count(m.budget));
    const int64_t budget = uniform[m.budget];
    EXPECT_LE(m.bytes, budget);
    EXPECT_GT(m.bytes, budget * 8 / 10);
    EXPECT_GE(m.accuracy, 0.0);
    EXPECT_LE(m.accuracy, 1.0);
  }
  // The Z > 0 attempt: one node at INT8, units pruned, within INT4's bytes.
  const auto top = std::find_if(all.begin(), all.end(), [](const Measured& m) { return m.method == "int8-top-pruned"; });
  ASSERT_NE(top, all.end());
  int64_t int8_nodes = 0, pruned = 0;
  for (const compress::NodeDecision& d : top->recipe.nodes) {
    int8_nodes += d.precision == compress::Precision::kInt8;
    pruned += static_cast<int64_t>(d.pruned_units.size());
  }
  EXPECT_EQ(int8_nodes, 1);
  EXPECT_GT(pruned, 0);
  // measure() restored the FP32 weights.
  EXPECT_DOUBLE_EQ(accuracy(*t.model, data.x_test, data.y_test), t.accuracy);
}

TEST(CompressionEval, MeasuredMaxLossHoldsOnValidationAndTheNextSmallerProbeDoesNot) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const cli::Digits data = cli::load_digits(data_dir() + "/digits.csv", 0.25, 2, kScenarioBatch);
  CompressionTask task = digits_mlp_task();
  task.steps = 60;
  Trained t = train_for_compression(task, data, 2);
  const MeasuredBound b = measured_max_loss(t, data, 0.01, 2);
  EXPECT_LE(b.validation_loss, 0.01);
  EXPECT_EQ(b.bytes, b.search.recipe.bytes);
  EXPECT_LT(b.bytes, b.search.recipe.fp32_bytes);
  if (!b.search.reached_smallest) {
    EXPECT_GT(b.search.next_smaller.loss, 0.01);
    EXPECT_LT(b.search.next_smaller.bytes, b.bytes);
  }
  EXPECT_GE(b.report_accuracy, 0.0);
  EXPECT_LE(b.report_accuracy, 1.0);
  // The search left the FP32 weights as they were.
  EXPECT_DOUBLE_EQ(accuracy(*t.model, data.x_test, data.y_test), t.accuracy);
  EXPECT_THAT(error_of([&] { measured_max_loss(t, data, -0.01, 2); }), HasSubstr("finite number >= 0"));
}

}  // namespace
}  // namespace gradscope::scenarios
