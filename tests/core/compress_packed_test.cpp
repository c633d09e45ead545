// compress::pack and unpack: codes laid out bit by bit as documented (checked by hand), values
// equal to q * scale computed here, bytes equal to the recipe's node_bytes for every precision,
// structured and unstructured pruning, other state entries untouched, bad input refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "../common/error_of.h"
#include "gradscope/core/compress/packed.h"
#include "gradscope/core/stats/half.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

NodeDecision node(const std::string& name, std::vector<int64_t> shape, int64_t bias, Precision p) {
  NodeDecision d;
  d.node = name;
  d.weight_shape = std::move(shape);
  d.bias = bias;
  d.precision = p;
  return d;
}

std::vector<float> floats_of(const StoredTensor& t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

const StoredTensor& named(const std::vector<StoredTensor>& ts, const std::string& name) {
  for (const StoredTensor& t : ts)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

TEST(CompressPacked, Int2CodesAreLaidOutLeastSignificantBitFirst) {
  // One unit of 5 weights, max 2: scale 2 / 1; q = round(w / 2) clamped to [-1, 1].
  const std::vector<float> w = {-2.0f, 0.4f, 2.0f, 1.2f, -0.9f};
  Recipe r;
  r.nodes = {node("fc", {1, 5}, 0, Precision::kInt2)};
  recompute_bytes(r);
  const PackedModel p = pack(r, {{"fc.weight", "F32", {1, 5}, w.data()}});
  // q = -1, 0, 1, 1, 0 (-0.45 rounds to -0); codes q + 2 = 1, 2, 3, 3, 2 at 2 bits each:
  // byte 0 = 1 | 2 << 2 | 3 << 4 | 3 << 6 = 249, byte 1 = 2.
  const StoredTensor& codes = named(p.tensors, "fc.weight.codes");
  ASSERT_EQ(codes.data.size(), 2u);
  EXPECT_EQ(codes.data[0], 249);
  EXPECT_EQ(codes.data[1], 2);
  EXPECT_EQ(floats_of(named(p.tensors, "fc.weight.scales")), std::vector<float>{2.0f});
  EXPECT_EQ(p.nodes[0].bytes, r.nodes[0].bytes);
  EXPECT_EQ(p.data_bytes(), 2 + 4);
  const std::vector<float> back = floats_of(named(unpack(p), "fc.weight"));
  EXPECT_EQ(back, (std::vector<float>{-2.0f, 0.0f, 2.0f, 2.0f, 0.0f}));
}

TEST(CompressPacked, EveryPrecisionEqualsItsGridAndTheRecipesBytes) {
  // Three units of 7 weights with a bias; unit 1 all zero.
  std::vector<float> w, b = {0.1f, -0.2f, 0.3f};
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 7; ++i) w.push_back(j == 1 ? 0.0f : std::sin(1.7f * static_cast<float>(i + 7 * j)) * (j + 1));
  for (Precision prec : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4, Precision::kInt3,
                         Precision::kInt2}) {
    SCOPED_TRACE(precision_name(prec));
    Recipe r;
    r.nodes = {node("a/fc", {3, 7}, 3, prec)};
    recompute_bytes(r);
    const PackedModel p = pack(r, {{"a.fc.weight", "F32", {3, 7}, w.data()}, {"a.fc.bias", "F32", {3}, b.data()}});
    EXPECT_EQ(p.nodes[0].node, "a.fc");
    EXPECT_EQ(p.nodes[0].bytes, r.nodes[0].bytes);
    EXPECT_EQ(p.node_bytes, r.bytes);
    const std::vector<StoredTensor> dense = unpack(p);
    const std::vector<float> got = floats_of(named(dense, "a.fc.weight"));
    const std::vector<float> bias = floats_of(named(dense, "a.fc.bias"));
    const int qmax = quant_max(prec);
    for (int j = 0; j < 3; ++j) {
      float m = 0;
      for (int i = 0; i < 7; ++i) m = std::max(m, std::fabs(w[7 * j + i]));
      for (int i = 0; i < 7; ++i) {
        const float x = w[7 * j + i];
        float want = x;
        if (prec == Precision::kFp16) want = half_to_float(float_to_half(x));
        if (qmax > 0) {
          const float scale = m / static_cast<float>(qmax);
          want = scale > 0 ? std::clamp(std::nearbyint(x / scale), -1.0f * qmax, 1.0f * qmax) * scale : 0.0f;
        }
        EXPECT_EQ(got[7 * j + i], want) << j << "," << i;
        if (qmax > 0) {
          EXPECT_LE(std::fabs(got[7 * j + i] - x), m / qmax / 2 + 1e-6f);
        }
      }
      EXPECT_EQ(bias[j], prec == Precision::kFp32 ? b[j] : half_to_float(float_to_half(b[j])));
    }
  }
}

TEST(CompressPacked, PrunedUnitsAndTheirInputsAreNotStored) {
  // fc1 [4, 2] feeds fc2 [3, 4]; fc1 prunes units 1 and 3, so fc2 keeps inputs 0 and 2.
  std::vector<float> w1 = {1, 2, 3, 4, 5, 6, 7, 8}, b1 = {1, 2, 3, 4}, w2(12), b2 = {9, 9, 9};
  for (int i = 0; i < 12; ++i) w2[i] = static_cast<float>(i + 1);
  Recipe r;
  r.nodes = {node("fc1", {4, 2}, 4, Precision::kFp32), node("fc2", {3, 4}, 3, Precision::kInt8)};
  r.nodes[0].next = "fc2";
  r.nodes[0].next_fan = 1;
  r.nodes[0].pruned_units = {3, 1};
  recompute_bytes(r);
  const std::vector<float> extra = {0.5f, -0.5f};
  const int64_t steps = 7;
  const PackedModel p = pack(r, {{"fc1.weight", "F32", {4, 2}, w1.data()},
                                 {"fc1.bias", "F32", {4}, b1.data()},
                                 {"fc2.weight", "F32", {3, 4}, w2.data()},
                                 {"fc2.bias", "F32", {3}, b2.data()},
                                 {"norm.shift", "F32", {2}, extra.data()},
                                 {"norm.steps", "I64", {}, &steps}});
  EXPECT_EQ(p.nodes[0].pruned_units, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p.nodes[1].pruned_inputs, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p.nodes[0].bytes, r.nodes[0].bytes);
  EXPECT_EQ(p.nodes[1].bytes, r.nodes[1].bytes);
  EXPECT_EQ(floats_of(named(p.tensors, "fc1.weight")), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(named(p.tensors, "fc2.weight.codes").data.size(), 6u);  // 3 units x 2 inputs
  EXPECT_EQ(p.other_bytes, 8 + 8);
  const std::vector<StoredTensor> dense = unpack(p);
  EXPECT_EQ(floats_of(named(dense, "fc1.weight")), (std::vector<float>{1, 2, 0, 0, 5, 6, 0, 0}));
  EXPECT_EQ(floats_of(named(dense, "fc1.bias")), (std::vector<float>{1, 0, 3, 0}));
  const std::vector<float> w2q = floats_of(named(dense, "fc2.weight"));
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(w2q[4 * j + 1], 0.0f);
    EXPECT_EQ(w2q[4 * j + 3], 0.0f);
    EXPECT_EQ(w2q[4 * j + 2], w2[4 * j + 2]);  // the unit's largest kept weight is exact
  }
  EXPECT_EQ(floats_of(named(dense, "norm.shift")), extra);
  int64_t steps_back = 0;
  std::memcpy(&steps_back, named(dense, "norm.steps").data.data(), 8);
  EXPECT_EQ(steps_back, 7);
}

TEST(CompressPacked, UnstructuredPruningStoresItsBitmapAndTheKeptWeightsOnly) {
  std::vector<float> w = {0.1f, -3.0f, 0.2f, 2.0f, -0.05f, 1.0f, 0.0f, 4.0f, 0.3f};
  Recipe r;
  r.nodes = {node("fc", {3, 3}, 0, Precision::kInt8)};
  r.magnitude_keep = 4.0 / 9.0;
  const std::vector<uint8_t> keep = {0, 1, 0, 1, 0, 1, 0, 1, 0};
  const PackedModel p = pack(r, {{"fc.weight", "F32", {3, 3}, w.data()}}, {{"fc", keep}});
  EXPECT_TRUE(p.nodes[0].bitmap);
  EXPECT_EQ(named(p.tensors, "fc.weight.mask").data, (std::vector<uint8_t>{0xaa, 0x00}));
  EXPECT_EQ(named(p.tensors, "fc.weight.codes").data.size(), 4u);
  EXPECT_EQ(p.nodes[0].bytes, node_bytes({3, 3}, 0, Precision::kInt8, 3, 3, 9, 4));
  const std::vector<float> back = floats_of(named(unpack(p), "fc.weight"));
  for (int i = 0; i < 9; ++i) {
    if (!keep[i]) {
      EXPECT_EQ(back[i], 0.0f);
    }
  }
  EXPECT_EQ(back[1], -3.0f);  // the only kept weight of unit 0: its own scale
  EXPECT_EQ(back[7], 4.0f);
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {3, 3}, w.data()}}); }), HasSubstr("keep mask of 9 weights"));
}

TEST(CompressPacked, BadInputIsRefusedNamingIt) {
  std::vector<float> w(6, 1.0f), b(2, 0.0f);
  Recipe r;
  r.nodes = {node("fc", {2, 3}, 2, Precision::kInt4)};
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {2, 3}, w.data()}}); }), HasSubstr("no state entry 'fc.bias'"));
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {3, 2}, w.data()}, {"fc.bias", "F32", {2}, b.data()}}); }),
              HasSubstr("weight is F32 [3, 2], the recipe's F32 [2, 3]"));
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F64", {2, 3}, w.data()}, {"fc.bias", "F32", {2}, b.data()}}); }),
              HasSubstr("weight is F64"));
  EXPECT_THAT(error_of([&] { pack(r, {{"x", "Q8", {1}, w.data()}}); }), HasSubstr("unknown tensor dtype 'Q8'"));
  w[4] = std::nanf("");
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {2, 3}, w.data()}, {"fc.bias", "F32", {2}, b.data()}}); }),
              HasSubstr("NaN or Inf"));
  w[4] = 1.0f;
  r.nodes[0].pruned_units = {1, 1};
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {2, 3}, w.data()}, {"fc.bias", "F32", {2}, b.data()}}); }),
              HasSubstr("pruned twice"));
  r.nodes[0].pruned_units = {1};
  EXPECT_THAT(error_of([&] { pack(r, {{"fc.weight", "F32", {2, 3}, w.data()}, {"fc.bias", "F32", {2}, b.data()}}); }),
              HasSubstr("no matching inputs"));
  // A packed model whose parts do not match its manifest.
  r.nodes[0].pruned_units.clear();
  PackedModel p = pack(r, {{"fc.weight", "F32", {2, 3}, w.data()}, {"fc.bias", "F32", {2}, b.data()}});
  p.tensors[0].data.pop_back();
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor 'fc.weight.codes' holds 2 bytes, its node needs 3"));
  p.tensors.erase(p.tensors.begin());
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor 'fc.weight.codes' is missing"));
}

}  // namespace
}  // namespace gradscope::compress

namespace gradscope::compress {
namespace {

// The row recipe of an 8 x 3 table with every row level (row 5 merged into row 3).
RowRecipe every_level_recipe() {
  RowRecipe r;
  r.table = "item";
  r.rows = 8;
  r.dim = 3;
  r.level = {kRowFp32, kRowFp16, kRowInt8, kRowInt4, kRowPruned, kRowMerged, kRowInt3, kRowInt2};
  r.merged_into = {-1, -1, -1, -1, -1, 3, -1, -1};
  r.fallback = {0.5, -0.25, 0.125};
  return r;
}

// An 8 x 3 table with every row level: values checked against each level's definition.
TEST(CompressPackedTable, EveryRowLevelIsStoredAsRowBytesCountsAndComesBack) {
  std::vector<float> x;
  for (int i = 0; i < 24; ++i) x.push_back(std::cos(0.9f * static_cast<float>(i)) * (1 + i % 5));
  const RowRecipe r = every_level_recipe();
  const PackedModel p = pack(Recipe{}, {{"item.weight", "F32", {8, 3}, x.data()}}, {}, {}, {{"item.weight", r}});
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].levels, (std::vector<uint8_t>{kRowFp32, kRowFp16, kRowInt8, kRowInt4, kRowInt3, kRowInt2,
                                                      kRowPruned, kRowMerged}));
  EXPECT_EQ(p.tables[0].bytes, row_bytes(3, r.level));
  EXPECT_EQ(p.table_bytes, p.data_bytes());
  // Eight levels: 3-bit codes, 8 rows -> 3 bytes; one merged index of 3 bits -> 1 byte.
  EXPECT_EQ(named(p.tensors, "item.weight.rows.codes").data.size(), 3u);
  for (const StoredTensor& t : p.tensors)  // each shape holds its data
    EXPECT_EQ(t.shape.at(0) * stored_dtype_size(t.dtype), static_cast<int64_t>(t.data.size())) << t.name;
  EXPECT_EQ(named(p.tensors, "item.weight.rows.merged").data.size(), 1u);
  EXPECT_EQ(named(p.tensors, "item.weight.rows.int4.codes").data.size(), 2u);  // 3 x 4 bits, from a byte boundary
  EXPECT_EQ(named(p.tensors, "item.weight.rows.int3.codes").data.size(), 2u);  // 3 x 3 bits
  EXPECT_EQ(named(p.tensors, "item.weight.rows.int2.codes").data.size(), 1u);  // 3 x 2 bits
  const std::vector<float> v = floats_of(named(unpack(p), "item.weight"));
  ASSERT_EQ(v.size(), 24u);
  auto grid = [&](int row, int qmax, int j) {
    float m = 0;
    for (int k = 0; k < 3; ++k) m = std::max(m, std::fabs(x[3 * row + k]));
    const float s = m / static_cast<float>(qmax);
    return std::clamp(std::nearbyint(x[3 * row + j] / s), -1.0f * qmax, 1.0f * qmax) * s;
  };
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(v[0 + j], x[0 + j]);
    EXPECT_EQ(v[3 + j], half_to_float(float_to_half(x[3 + j])));
    EXPECT_EQ(v[6 + j], grid(2, 127, j));
    EXPECT_EQ(v[9 + j], grid(3, 7, j));
    EXPECT_EQ(v[12 + j], static_cast<float>(r.fallback[j]));
    EXPECT_EQ(v[15 + j], v[9 + j]);   // merged into row 3: its stored INT4 values
    EXPECT_EQ(v[18 + j], grid(6, 3, j));
    EXPECT_EQ(v[21 + j], grid(7, 1, j));
  }
  // A merged row must share a stored row; the recipe must be for the entry's shape.
  RowRecipe bad = r;
  bad.merged_into[5] = 4;  // the pruned row
  EXPECT_THAT(error_of([&] { pack(Recipe{}, {{"item.weight", "F32", {8, 3}, x.data()}}, {}, {}, {{"item.weight", bad}}); }),
              HasSubstr("merged row 5 shares row 4, which is not a stored row"));
  EXPECT_THAT(error_of([&] { pack(Recipe{}, {{"item.weight", "F32", {6, 4}, x.data()}}, {}, {}, {{"item.weight", r}}); }),
              HasSubstr("table 'item.weight' is F32 [6, 4], its row recipe is for F32 [8, 3]"));
  EXPECT_THAT(error_of([&] { pack(Recipe{}, {}, {}, {}, {{"user.weight", r}}); }), HasSubstr("no state entry 'user.weight'"));
  // A uniform table needs no codes.
  RowRecipe u = r;
  u.level.assign(8, kRowInt8);
  u.merged_into.clear();
  const PackedModel q = pack(Recipe{}, {{"item.weight", "F32", {8, 3}, x.data()}}, {}, {}, {{"item.weight", u}});
  EXPECT_EQ(q.table_bytes, 8 * (3 + 4));
  EXPECT_THROW(named(q.tensors, "item.weight.rows.codes"), std::runtime_error);
}

}  // namespace
}  // namespace gradscope::compress

namespace gradscope::compress {
namespace {

// Hostile packed models: what a crafted or damaged file's manifest and tensors can say. Each is
// refused naming the node or table and what is wrong, before a part is read past its end.

StoredTensor& part_of(PackedModel& p, const std::string& name) {
  for (StoredTensor& t : p.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

void set_float(StoredTensor& t, std::size_t i, float v) { std::memcpy(t.data.data() + 4 * i, &v, 4); }

// fc1 [3, 5] at INT4 with a bias prunes unit 1, so fc2 [2, 3] at INT8 loses input 1.
PackedModel pruned_pair() {
  static std::vector<float> w1, b1 = {0.1f, 0.2f, 0.3f}, w2, b2 = {1, 2};
  for (int i = 0; i < 15; ++i) w1.push_back(std::sin(0.7f * static_cast<float>(i)));
  for (int i = 0; i < 6; ++i) w2.push_back(std::cos(0.3f * static_cast<float>(i)));
  Recipe r;
  r.nodes = {node("fc1", {3, 5}, 3, Precision::kInt4), node("fc2", {2, 3}, 2, Precision::kInt8)};
  r.nodes[0].next = "fc2";
  r.nodes[0].next_fan = 1;
  r.nodes[0].pruned_units = {1};
  return pack(r, {{"fc1.weight", "F32", {3, 5}, w1.data()},
                  {"fc1.bias", "F32", {3}, b1.data()},
                  {"fc2.weight", "F32", {2, 3}, w2.data()},
                  {"fc2.bias", "F32", {2}, b2.data()}});
}

TEST(CompressPackedHostile, APrunedUnitOrInputListedTwiceIsRefusedNotReadPastItsParts) {
  PackedModel p = pruned_pair();
  ASSERT_NO_THROW(unpack(p));
  // Unit 1 twice: 3 - 2 = 1 kept unit by the count, 2 by the units visited. The scales and
  // bias cut to one unit's match the count; reading the second unit's went past them.
  p.nodes[0].pruned_units = {1, 1};
  for (auto [name, bytes] : {std::pair<const char*, int>{"fc1.weight.scales", 4}, {"fc1.bias", 2}}) {
    StoredTensor& t = part_of(p, name);
    t.data = std::vector<uint8_t>(t.data.begin(), t.data.begin() + bytes);  // no spare capacity
    t.shape = {1};
    p.nodes[0].bytes -= bytes;
  }
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc1': pruned_units: unit 1 is listed twice"));
  p = pruned_pair();
  p.nodes[1].pruned_inputs = {1, 1};
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc2': pruned_inputs: input 1 is listed twice"));
  p.nodes[1].pruned_inputs = {2, 1};
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc2': pruned_inputs: not ascending"));
  p = pruned_pair();
  p.nodes[0].pruned_units = {0, 1, 2};
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc1': pruned_units: prunes every unit"));
}

TEST(CompressPackedHostile, ANodeOrTableListedTwiceOrWithWrongBytesIsRefused) {
  PackedModel p = pruned_pair();
  p.nodes.push_back(p.nodes[0]);
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc1' is listed twice"));
  p = pruned_pair();
  p.nodes[1].bytes += 1;
  EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc2': bytes"));
  std::vector<float> x(12, 0.5f);
  RowRecipe r;
  r.table = "item";
  r.rows = 4;
  r.dim = 3;
  r.level = {kRowFp32, kRowInt8, kRowPruned, kRowInt8};
  r.fallback = {0, 0, 0};
  PackedModel t = pack(Recipe{}, {{"item.weight", "F32", {4, 3}, x.data()}}, {}, {}, {{"item.weight", r}});
  t.tables.push_back(t.tables[0]);
  EXPECT_THAT(error_of([&] { unpack(t); }), HasSubstr("table 'item.weight' is listed twice"));
  t.tables.pop_back();
  t.tables[0].levels = {kRowFp32, kRowInt8, kRowInt8, kRowPruned};  // still 2-bit codes
  EXPECT_THAT(error_of([&] { unpack(t); }), HasSubstr("table 'item.weight': levels: int8 is listed twice"));
}

TEST(CompressPackedHostile, NonFiniteNegativeOrOverflowingScalesAreRefused) {
  const float nan = std::nanf(""), inf = INFINITY;
  for (Precision prec : {Precision::kInt8, Precision::kInt4}) {
    SCOPED_TRACE(precision_name(prec));
    std::vector<float> w(15, 0.25f);
    Recipe r;
    r.nodes = {node("fc", {3, 5}, 0, prec)};
    const PackedModel good = pack(r, {{"fc.weight", "F32", {3, 5}, w.data()}});
    for (float bad : {nan, inf, -inf, -1.0f, 3e38f}) {
      PackedModel p = good;
      set_float(part_of(p, "fc.weight.scales"), 1, bad);
      EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("node 'fc': tensor 'fc.weight.scales': scale 1 is")) << bad;
    }
    PackedModel zero = good;  // an all-zero unit's scale (quantise_unit)
    set_float(part_of(zero, "fc.weight.scales"), 1, 0.0f);
    EXPECT_NO_THROW(unpack(zero));
  }
}

TEST(CompressPackedHostile, NonFiniteTableScalesAndFallbackRowsAreRefused) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = 0.1f * static_cast<float>(i) - 0.5f;
  RowRecipe r;
  r.table = "item";
  r.rows = 4;
  r.dim = 3;
  r.level = {kRowInt8, kRowInt8, kRowPruned, kRowFp32};
  r.fallback = {0.5, -0.5, 0.25};
  const PackedModel good = pack(Recipe{}, {{"item.weight", "F32", {4, 3}, x.data()}}, {}, {}, {{"item.weight", r}});
  ASSERT_NO_THROW(unpack(good));
  for (float bad : {std::nanf(""), INFINITY, -1.0f, 3e38f}) {
    PackedModel p = good;
    set_float(part_of(p, "item.weight.rows.int8.scales"), 1, bad);
    EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor 'item.weight.rows.int8.scales': scale 1 is")) << bad;
  }
  for (float bad : {std::nanf(""), -INFINITY}) {
    PackedModel p = good;
    set_float(part_of(p, "item.weight.rows.fallback"), 2, bad);
    EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor 'item.weight.rows.fallback': value 2 is")) << bad;
  }
}

// What unpack refuses is never written.
TEST(CompressPackedHostile, PackRefusesWhatUnpackRefuses) {
  std::vector<float> w(6, 0.5f), w3(4, 0.25f);
  Recipe r;
  r.nodes = {node("a", {2, 3}, 0, Precision::kInt8), node("b", {2, 3}, 0, Precision::kInt8),
             node("c", {2, 2}, 0, Precision::kInt8)};
  r.nodes[0].next = r.nodes[1].next = "c";
  r.nodes[0].next_fan = r.nodes[1].next_fan = 1;
  r.nodes[0].pruned_units = r.nodes[1].pruned_units = {0};  // both remove c's input 0
  const std::vector<StateEntry> state = {
      {"a.weight", "F32", {2, 3}, w.data()}, {"b.weight", "F32", {2, 3}, w.data()}, {"c.weight", "F32", {2, 2}, w3.data()}};
  EXPECT_THAT(error_of([&] { pack(r, state); }), HasSubstr("node 'c': input 0 is pruned twice"));
  r.nodes[0].pruned_units = {0, 1};
  EXPECT_THAT(error_of([&] { pack(r, state); }), HasSubstr("node 'a': prunes every unit"));
  std::vector<float> x(6, 1.0f);
  RowRecipe t;
  t.table = "item";
  t.rows = 2;
  t.dim = 3;
  t.level = {kRowPruned, kRowPruned};
  t.fallback = {0, 0, 0};
  EXPECT_THAT(error_of([&] { pack(Recipe{}, {{"item.weight", "F32", {2, 3}, x.data()}}, {}, {}, {{"item.weight", t}}); }),
              HasSubstr("table 'item.weight': every row is pruned or merged"));
  t.level = {kRowPruned, kRowFp32};
  t.fallback = {0, std::nan(""), 0};
  EXPECT_THAT(error_of([&] { pack(Recipe{}, {{"item.weight", "F32", {2, 3}, x.data()}}, {}, {}, {{"item.weight", t}}); }),
              HasSubstr("table 'item.weight': its fallback row holds NaN or Inf"));
}

// Each part of every kind of node and table declared with another dtype of the same size, or
// with another shape of the same size: refused naming the part, never read as what it is not.
TEST(CompressPackedHostile, APartDeclaredWithAnotherDtypeOrShapeIsRefused) {
  std::vector<float> w(15), b = {0.1f, 0.2f, 0.3f}, x(24);
  for (int i = 0; i < 15; ++i) w[i] = std::sin(0.9f * static_cast<float>(i));
  for (int i = 0; i < 24; ++i) x[i] = std::cos(0.4f * static_cast<float>(i));
  const std::vector<StateEntry> state = {{"fc.weight", "F32", {3, 5}, w.data()}, {"fc.bias", "F32", {3}, b.data()}};
  std::vector<PackedModel> models;
  for (Precision prec : {Precision::kInt4, Precision::kFp32, Precision::kFp16}) {
    Recipe r;
    r.nodes = {node("fc", {3, 5}, 3, prec)};
    models.push_back(pack(r, state));
  }
  Recipe m;  // a bitmap
  m.nodes = {node("fc", {3, 5}, 3, Precision::kFp16)};
  m.magnitude_keep = 0.5;
  std::vector<uint8_t> keep(15);
  for (int i = 0; i < 15; ++i) keep[i] = i % 2;
  models.push_back(pack(m, state, {{"fc", keep}}));
  models.push_back(
      pack(Recipe{}, {{"item.weight", "F32", {8, 3}, x.data()}}, {}, {}, {{"item.weight", every_level_recipe()}}));
  const std::map<std::string, std::vector<std::string>> same_size = {
      {"U8", {"I8", "BOOL"}}, {"F32", {"I32", "U32"}}, {"F16", {"BF16", "I16"}}};
  int cases = 0;
  for (const PackedModel& good : models) {
    ASSERT_NO_THROW(unpack(good));
    for (std::size_t k = 0; k < good.tensors.size(); ++k) {
      const StoredTensor& part = good.tensors[k];
      SCOPED_TRACE(part.name);
      for (const std::string& dtype : same_size.at(part.dtype)) {
        PackedModel p = good;
        p.tensors[k].dtype = dtype;
        EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor '" + part.name + "' is " + dtype)) << dtype;
        ++cases;
      }
      PackedModel p = good;
      p.tensors[k].shape = {1, part.shape.at(0)};
      EXPECT_THAT(error_of([&] { unpack(p); }), HasSubstr("tensor '" + part.name + "' is " + part.dtype + " [1, "));
    }
  }
  EXPECT_EQ(cases, 2 * 23);  // codes, scales, values, masks, biases, every table part
}

}  // namespace
}  // namespace gradscope::compress
