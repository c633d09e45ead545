// compress::save and compress::load on LibTorch modules: a model loaded from the packed file
// equals the same recipe applied in memory bit for bit (parameters, buffers, outputs) for every
// precision, pruned units and the magnitude baseline; the file's size on disk is the applied
// bytes plus the other state plus the header; a file for another model is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <ATen/ATen.h>
#include <unistd.h>

#include <filesystem>

#include "../common/compress_fixture.h"
#include "../common/error_of.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/io/compress/packed_file.h"
#include "gradscope/torch/compress/packed.h"

namespace gradscope::compress {
namespace {

namespace nn = ::torch::nn;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

// fc1 (8 x 6) -> BatchNorm -> ReLU -> fc2 (5 x 8) -> ReLU -> out (3 x 5); seed picks the weights.
nn::Sequential model(int seed) {
  ::torch::manual_seed(seed);
  nn::Sequential net({{"fc1", nn::Linear(6, 8)},
                      {"bn", nn::BatchNorm1d(8)},
                      {"relu1", nn::ReLU()},
                      {"fc2", nn::Linear(8, 5)},
                      {"relu2", nn::ReLU()},
                      {"out", nn::Linear(5, 3)}});
  // Buffers away from their initial values, as after training.
  net->train();
  for (int i = 0; i < 3; ++i) net->forward(at::randn({16, 6}));
  net->eval();
  return net;
}

std::vector<NodeProfile> profiles() {
  std::vector<NodeProfile> p = {test::linear_node("fc1", 8, 6), test::linear_node("fc2", 5, 8),
                                test::linear_node("out", 3, 5)};
  p[1].next = "out";
  p[1].next_fan = 1;
  return p;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gradscope-packed-model-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void expect_identical_entries(nn::Sequential& a, nn::Sequential& b) {
  const auto sa = model_state(*a.ptr()), sb = model_state(*b.ptr());
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    EXPECT_TRUE(at::equal(sa[i].second, sb[i].second)) << sa[i].first;
  }
}

void expect_identical(nn::Sequential& a, nn::Sequential& b) {
  expect_identical_entries(a, b);
  const at::Tensor x = at::randn({10, 6});
  ::torch::NoGradGuard g;
  EXPECT_TRUE(at::equal(a->forward(x), b->forward(x)));
}

TEST(PackedModel, LoadedEqualsAppliedBitForBitAtEveryPrecision) {
  TempDir dir;
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4, Precision::kInt3,
                      Precision::kInt2}) {
    SCOPED_TRACE(precision_name(p));
    Recipe r = uniform_recipe(profiles(), p);
    nn::Sequential original = model(1), applied = model(1), loaded = model(2);
    const Applied a = compress::apply(*applied.ptr(), r);
    const std::string path = (dir.path / (std::string(precision_name(p)) + ".safetensors")).string();
    const PackedFileSize size = compress::save(*original.ptr(), r, path);
    compress::load(*loaded.ptr(), path);
    expect_identical(applied, loaded);
    // On disk: the nodes' bytes as apply() reports them, BatchNorm's state as it is, the header.
    int64_t bn_bytes = 0;
    for (const auto& [name, t] : model_state(*original.ptr()))
      if (name.rfind("bn.", 0) == 0) bn_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    EXPECT_EQ(a.bytes, r.bytes);
    EXPECT_EQ(size.data_bytes, a.bytes + bn_bytes);
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), size.header_bytes + a.bytes + bn_bytes);
    EXPECT_EQ(size.file_bytes, static_cast<int64_t>(fs::file_size(path)));
    // The original is not changed by save().
    nn::Sequential fresh = model(1);
    EXPECT_TRUE(at::equal(original[0]->as<nn::Linear>()->weight, fresh[0]->as<nn::Linear>()->weight));
  }
}

TEST(PackedModel, PrunedUnitsAndMagnitudeBaselineLoadAsApplied) {
  TempDir dir;
  Recipe pruned = uniform_recipe(profiles(), Precision::kInt4);
  pruned.nodes[1].pruned_units = {0, 3};
  recompute_bytes(pruned);
  const Recipe magnitude = magnitude_recipe(profiles(), Precision::kInt8, uniform_recipe(profiles(), Precision::kInt4).bytes);
  for (const Recipe* r : std::vector<const Recipe*>{&pruned, &magnitude}) {
    SCOPED_TRACE(r->method);
    nn::Sequential original = model(1), applied = model(1), loaded = model(3);
    const Applied a = compress::apply(*applied.ptr(), *r);
    const std::string path = (dir.path / "m.safetensors").string();
    const PackedFileSize size = compress::save(*original.ptr(), *r, path);
    compress::load(*loaded.ptr(), path);
    expect_identical(applied, loaded);
    const PackedModel back = read_packed(path);
    EXPECT_EQ(back.node_bytes, a.bytes);
    EXPECT_EQ(size.data_bytes - back.other_bytes, a.bytes);
  }
  // The pruned units' weights and the next node's inputs are zero after loading.
  nn::Sequential loaded = model(3);
  compress::save(*model(1).ptr(), pruned, (dir.path / "p.safetensors").string());
  compress::load(*loaded.ptr(), (dir.path / "p.safetensors").string());
  const at::Tensor fc2 = loaded[3]->as<nn::Linear>()->weight, out = loaded[5]->as<nn::Linear>()->weight;
  EXPECT_EQ(fc2[0].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(out.select(1, 3).abs().sum().item<float>(), 0.0f);
  EXPECT_GT(out.select(1, 1).abs().sum().item<float>(), 0.0f);
}

TEST(PackedModel, GptqRoundingLoadsAsAppliedInTheSameBytesAndMovesTheOutputLess) {
  TempDir dir;
  nn::Sequential original = model(1);
  // Each node's inputs on a calibration batch, by running the children in turn.
  ::torch::manual_seed(11);
  const at::Tensor x = at::randn({128, 6});
  InputGrams grams;
  {
    ::torch::NoGradGuard g;
    const at::Tensor h1 = original[2]->as<nn::ReLU>()->forward(original[1]->as<nn::BatchNorm1d>()->forward(
        original[0]->as<nn::Linear>()->forward(x)));
    const at::Tensor h2 = original[4]->as<nn::ReLU>()->forward(original[3]->as<nn::Linear>()->forward(h1));
    grams = {{"fc1", input_gram(x)}, {"fc2", input_gram(h1)}, {"out", input_gram(h2)}};
  }
  EXPECT_TRUE(at::allclose(grams["fc1"], x.to(at::kDouble).t().mm(x.to(at::kDouble))));
  const Recipe r = uniform_recipe(profiles(), Precision::kInt3);
  nn::Sequential applied = model(1), nearest = model(1), loaded = model(2);
  const Applied a = compress::apply(*applied.ptr(), r, grams);
  const Applied b = compress::apply(*nearest.ptr(), r);
  EXPECT_EQ(a.bytes, b.bytes);
  const std::string path = (dir.path / "gptq.safetensors").string();
  compress::save(*original.ptr(), r, path, grams);
  compress::load(*loaded.ptr(), path);
  expect_identical(applied, loaded);
  // fc1 sees the calibration batch itself: its output moved less than round-to-nearest's.
  ::torch::NoGradGuard g;
  const at::Tensor w = original[0]->as<nn::Linear>()->weight;
  auto moved = [&](nn::Sequential& m) { return (x.mm(w.t()) - x.mm(m[0]->as<nn::Linear>()->weight.t())).pow(2).sum().item<double>(); };
  EXPECT_LT(moved(applied), moved(nearest));
  EXPECT_FALSE(at::equal(applied[0]->as<nn::Linear>()->weight, nearest[0]->as<nn::Linear>()->weight));
  // A Gram matrix of the wrong size or for a node the recipe lacks is refused.
  InputGrams wrong = {{"fc1", input_gram(at::randn({4, 5}))}};
  EXPECT_THAT(error_of([&] { compress::apply(*model(1).ptr(), r, wrong); }), HasSubstr("its weight needs [6, 6]"));
  wrong = {{"head", input_gram(x)}};
  EXPECT_THAT(error_of([&] { compress::apply(*model(1).ptr(), r, wrong); }), HasSubstr("'head', which the recipe does not hold"));
}

TEST(PackedModel, AnEmbeddingTablePackedRowByRowLoadsAsApplied) {
  TempDir dir;
  ::torch::manual_seed(4);
  nn::Sequential net({{"emb", nn::Embedding(12, 6)}, {"fc", nn::Linear(6, 3)}});
  RowRecipe r;
  r.table = "item";
  r.rows = 12;
  r.dim = 6;
  r.level = {kRowFp32, kRowInt8, kRowInt4, kRowInt4, kRowPruned, kRowFp16, kRowMerged, kRowInt8,
             kRowInt4, kRowPruned, kRowInt8, kRowInt4};
  r.merged_into.assign(12, -1);
  r.merged_into[6] = 1;
  r.fallback = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  const Recipe nodes = uniform_recipe({test::linear_node("fc", 3, 6)}, Precision::kInt8);
  nn::Sequential applied({{"emb", nn::Embedding(12, 6)}, {"fc", nn::Linear(6, 3)}});
  {
    ::torch::NoGradGuard g;
    for (std::size_t i = 0; i < model_state(*net.ptr()).size(); ++i)
      model_state(*applied.ptr())[i].second.copy_(model_state(*net.ptr())[i].second);
  }
  at::Tensor table = applied[0]->as<nn::Embedding>()->weight;
  const int64_t bytes = apply_rows(table, r);
  compress::apply(*applied.ptr(), nodes);
  const std::string path = (dir.path / "emb.safetensors").string();
  const PackedFileSize size = compress::save(*net.ptr(), nodes, path, {}, {{"emb.weight", r}});
  nn::Sequential fresh({{"emb", nn::Embedding(12, 6)}, {"fc", nn::Linear(6, 3)}});
  compress::load(*fresh.ptr(), path);
  expect_identical_entries(applied, fresh);
  EXPECT_EQ(bytes, row_bytes(6, r.level));
  EXPECT_EQ(size.data_bytes, bytes + nodes.bytes);
  EXPECT_TRUE(at::equal(fresh[0]->as<nn::Embedding>()->weight[6], fresh[0]->as<nn::Embedding>()->weight[1]));
  EXPECT_TRUE(at::equal(fresh[0]->as<nn::Embedding>()->weight[4].to(at::kDouble),
                        at::tensor(r.fallback, at::kDouble).to(at::kFloat).to(at::kDouble)));
}

TEST(PackedModel, SaveWeightsRoundTripsEveryEntryExactly) {
  TempDir dir;
  nn::Sequential a = model(1), b = model(4);
  const std::string path = (dir.path / "w.safetensors").string();
  const PackedFileSize size = compress::save_weights(*a.ptr(), path);
  int64_t bytes = 0;
  for (const auto& [name, t] : model_state(*a.ptr())) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  EXPECT_EQ(size.data_bytes, bytes);
  compress::load(*b.ptr(), path);
  expect_identical(a, b);
}

TEST(PackedModel, AFileForAnotherModelIsRefusedBeforeAnyChange) {
  TempDir dir;
  const std::string path = (dir.path / "m.safetensors").string();
  compress::save(*model(1).ptr(), uniform_recipe(profiles(), Precision::kInt8), path);
  ::torch::manual_seed(5);
  nn::Sequential other({{"fc1", nn::Linear(6, 8)}, {"fc2", nn::Linear(8, 4)}});
  const at::Tensor before = other[0]->as<nn::Linear>()->weight.clone();
  const std::string e = error_of([&] { compress::load(*other.ptr(), path); });
  EXPECT_THAT(e, HasSubstr("does not fit this model"));
  EXPECT_THAT(e, HasSubstr("'out.weight'"));  // in the file, not in the model
  EXPECT_THAT(e, HasSubstr("shapes differ for 'fc2.weight' (file [5, 8], model [4, 8])"));
  EXPECT_TRUE(at::equal(before, other[0]->as<nn::Linear>()->weight));
  EXPECT_THAT(error_of([&] { compress::load(*other.ptr(), (dir.path / "none").string()); }), HasSubstr("no such file"));
  // A recipe for another model is refused by save() before anything is written.
  EXPECT_THAT(error_of([&] { compress::save(*other.ptr(), uniform_recipe(profiles(), Precision::kInt8), path + "2"); }),
              HasSubstr("no state entry 'out.weight'"));
  EXPECT_FALSE(fs::exists(path + "2"));
}

// A plain I32 entry under a float parameter's name loaded as that parameter, converted by copy_
// without a word; integer entries load only into their own dtype.
TEST(PackedModel, AnIntegerEntryUnderAFloatParametersNameIsRefused) {
  TempDir dir;
  nn::Sequential a = model(1), b = model(4);
  const std::string path = (dir.path / "i32.safetensors").string();
  PackedModel p;
  for (const auto& [name, t] : model_state(*a.ptr())) {
    const bool swap = name == "fc1.bias";
    const at::Tensor x = swap ? t.to(at::kInt).contiguous() : t.contiguous();
    const auto* bytes = static_cast<const uint8_t*>(x.data_ptr());
    p.tensors.push_back({name, swap ? "I32" : (x.scalar_type() == at::kLong ? "I64" : "F32"), x.sizes().vec(),
                         std::vector<uint8_t>(bytes, bytes + x.numel() * x.element_size())});
  }
  write_packed(path, p);
  const at::Tensor before = b[0]->as<nn::Linear>()->bias.clone();
  EXPECT_THAT(error_of([&] { compress::load(*b.ptr(), path); }),
              HasSubstr("dtypes cannot load for 'fc1.bias' (file I32, model F32)"));
  EXPECT_TRUE(at::equal(before, b[0]->as<nn::Linear>()->bias));
  EXPECT_FALSE(loads_into("I64", "F32"));
  EXPECT_FALSE(loads_into("F32", "I64"));
  EXPECT_FALSE(loads_into("BOOL", "U8"));
  EXPECT_TRUE(loads_into("F32", "F64"));  // a node's dequantised weight into a float64 model
  EXPECT_TRUE(loads_into("F16", "BF16"));
  EXPECT_TRUE(loads_into("I64", "I64"));
}

// A valid file may declare a dense state far beyond its size (merged rows store an index, not
// values): 100,000 rows of 1,000,000 values, 400 GB dense, from a 4 MB file. Against a model
// whose table is small it is refused before anything is decoded (it was unpacked first:
// std::bad_alloc, not an error naming the table).
TEST(PackedModel, AFileDeclaringMoreThanTheModelIsRefusedBeforeItIsDecoded) {
  TempDir dir;
  const std::string path = (dir.path / "huge.safetensors").string();
  constexpr int64_t kRows = 100000, kDim = 1000000;
  PackedModel p;
  PackedTable t;
  t.name = "item.weight";
  t.rows = kRows;
  t.dim = kDim;
  t.levels = {kRowFp32, kRowMerged};  // row 0 stored, every other row shares it
  std::vector<uint8_t> codes(static_cast<std::size_t>((kRows * row_code_bits(2) + 7) / 8), 0xff);
  codes[0] = 0xfe;
  const int64_t index_bits = row_index_bits(kRows);
  p.tensors.push_back({"item.weight.rows.codes", "U8", {static_cast<int64_t>(codes.size())}, codes});
  p.tensors.push_back({"item.weight.rows.fp32", "F32", {kDim}, std::vector<uint8_t>(static_cast<std::size_t>(kDim) * 4, 0)});
  const auto merged = static_cast<int64_t>(((kRows - 1) * index_bits + 7) / 8);
  p.tensors.push_back({"item.weight.rows.merged", "U8", {merged}, std::vector<uint8_t>(static_cast<std::size_t>(merged), 0)});
  for (const StoredTensor& x : p.tensors) t.bytes += static_cast<int64_t>(x.data.size());
  p.tables = {t};
  write_packed(path, p);
  EXPECT_EQ(check_packed(read_packed(path)).at(0).shape, (std::vector<int64_t>{kRows, kDim}));  // valid as a file
  nn::Sequential m({{"item", nn::Embedding(kRows, 4)}});
  EXPECT_THAT(error_of([&] { compress::load(*m.ptr(), path); }),
              HasSubstr("shapes differ for 'item.weight' (file [100000, 1000000], model [100000, 4])"));
}

}  // namespace
}  // namespace gradscope::compress
