// Recipe storage sizes (core/compress/recipe.h): each figure computed by hand from the documented
// layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "../common/compress_fixture.h"
#include "../common/error_of.h"
#include "gradscope/core/compress/recipe.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

// fc1: 4 units x 3 inputs, fc2: 2 units x 4 inputs (fed by fc1, fan 1).
std::vector<NodeProfile> two_layers() { return test::linear_chain(3, 4, 2); }

TEST(CompressBytes, NodeBytesFollowTheLayout) {
  // FP32: 12 x 4 + 4 biases x 4.
  EXPECT_EQ(node_bytes({4, 3}, 4, Precision::kFp32, 4, 3), 64);
  // FP16: 12 x 2 + 4 x 2.
  EXPECT_EQ(node_bytes({4, 3}, 4, Precision::kFp16, 4, 3), 32);
  // INT8: 12 + 4 scales x 4 + 4 FP16 biases x 2.
  EXPECT_EQ(node_bytes({4, 3}, 4, Precision::kInt8, 4, 3), 36);
  // INT4: 6 + 16 + 8.
  EXPECT_EQ(node_bytes({4, 3}, 4, Precision::kInt4, 4, 3), 30);
  // One INT4 weight rounds up to a byte, plus its scale: more than FP32's 4 bytes.
  EXPECT_EQ(node_bytes({1, 1}, 0, Precision::kInt4, 1, 1), 5);
  // Conv [8, 1, 3, 3]: 72 weights at INT4 = 36, 8 scales, 8 biases.
  EXPECT_EQ(node_bytes({8, 1, 3, 3}, 8, Precision::kInt4, 8, 1), 36 + 32 + 16);
  // Bitmap: 5 kept INT8 weights of 12, bitmap 2 bytes, 4 scales, 4 FP16 biases.
  EXPECT_EQ(node_bytes({4, 3}, 4, Precision::kInt8, 4, 3, 12, 5), 5 + 2 + 16 + 8);
}

TEST(CompressBytes, PruningRemovesUnitsAndTheNextNodesInputs) {
  Recipe r = fp32_recipe(two_layers());
  EXPECT_EQ(r.bytes, 64 + (8 * 4 + 2 * 4));
  EXPECT_EQ(r.fp32_bytes, r.bytes);
  r.nodes[0].pruned_units = {0, 2};
  recompute_bytes(r);
  EXPECT_EQ(pruned_inputs(r.nodes, "fc2"), 2);
  EXPECT_EQ(pruned_inputs(r.nodes, "fc1"), 0);
  EXPECT_EQ(r.nodes[0].bytes, 2 * 3 * 4 + 2 * 4);
  EXPECT_EQ(r.nodes[1].bytes, 2 * 2 * 4 + 2 * 4);
  EXPECT_EQ(r.fp32_bytes, 104);
}

TEST(CompressBytes, UniformRecipes) {
  const Recipe r8 = uniform_recipe(two_layers(), Precision::kInt8);
  EXPECT_EQ(r8.method, "uniform-int8");
  EXPECT_EQ(r8.bytes, 36 + (8 + 2 * 4 + 2 * 2));
  const Recipe r4 = uniform_recipe(two_layers(), Precision::kInt4);
  EXPECT_EQ(r4.bytes, 30 + (4 + 8 + 4));
  for (const NodeDecision& d : r4.nodes) EXPECT_EQ(d.precision, Precision::kInt4);
}

TEST(CompressBytes, MagnitudeBaselineFitsItsBudget) {
  const Recipe r = magnitude_recipe(two_layers(), Precision::kInt8, 60);
  EXPECT_EQ(r.method, "magnitude-int8");
  EXPECT_LE(r.bytes, 60);
  EXPECT_GT(r.magnitude_keep, 0.0);
  EXPECT_LT(r.magnitude_keep, 1.0);
  // Fixed part: bitmaps 2 + 1 bytes, scales 16 + 8, biases 8 + 4, rounding 2 = 41: 19 weights.
  EXPECT_DOUBLE_EQ(r.magnitude_keep, 19.0 / 20.0);
  EXPECT_THAT(error_of([] { magnitude_recipe(two_layers(), Precision::kInt8, 40); }), HasSubstr("cannot be met"));
  EXPECT_THAT(error_of([] { magnitude_recipe(two_layers(), Precision::kInt4, 60); }), HasSubstr("int4"));
}

TEST(CompressPrecision, NamesRoundTripAndBadNamesAreErrors) {
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4, Precision::kInt3,
                      Precision::kInt2})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_EQ(precision_bits(Precision::kInt4), 4);
  EXPECT_EQ(precision_bits(Precision::kInt2), 2);
  // Symmetric grids: the most negative code of each width is unused.
  EXPECT_EQ(quant_max(Precision::kInt8), 127);
  EXPECT_EQ(quant_max(Precision::kInt4), 7);
  EXPECT_EQ(quant_max(Precision::kInt3), 3);
  EXPECT_EQ(quant_max(Precision::kInt2), 1);
  EXPECT_EQ(quant_max(Precision::kFp16), 0);
  EXPECT_EQ(error_of([] { parse_precision("int5"); }),
            "unknown precision 'int5' (expected fp32, fp16, int8, int4, int3 or int2)");
}

TEST(CompressProfiles, BadProfilesNameTheNode) {
  auto with = [](auto change) {
    std::vector<NodeProfile> p = two_layers();
    change(p);
    return error_of([&] { check_profiles(p); });
  };
  EXPECT_EQ(with([](auto&) {}), "no error");
  EXPECT_THAT(with([](auto& p) {
                p[1].node = "fc1";
                p[0].next.clear();
              }), HasSubstr("node 'fc1': appears twice"));
  EXPECT_THAT(with([](auto& p) { p[0].bias = 3; }), HasSubstr("node 'fc1': bias of 3 elements for 4 units"));
  EXPECT_THAT(with([](auto& p) { p[0].next_fan = 2; }), HasSubstr("do not match the 4 inputs of 'fc2'"));
  EXPECT_THAT(with([](auto& p) { p[0].next = "nope"; }), HasSubstr("next node 'nope' is not a later node"));
  EXPECT_THAT(with([](auto& p) { p[0].weight_shape = {4, 0}; }), HasSubstr("has a dimension < 1"));
  EXPECT_THAT(with([](auto& p) { p[0].max_abs = {1, 2}; }), HasSubstr("2 values for 4 units"));
  EXPECT_THAT(with([](auto& p) { p[0].max_abs = {1, 2, NAN, 3}; }), HasSubstr("not finite"));
  EXPECT_THAT(with([](auto& p) { p[0].node.clear(); }), HasSubstr("has no name"));
}

}  // namespace
}  // namespace gradscope::compress
