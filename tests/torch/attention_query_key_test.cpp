// Attention statistics from a scaled_dot_product_attention call's q and k: against logits
// written out here in loops (q head h reads k head h / group, causal top-left, masks as SDPA
// takes them) and a long-double softmax, whose semantics are checked against LibTorch's own
// scaled_dot_product_attention output; blocks of one query row agree with one block; at
// unsampled steps nothing is read; bad input is refused naming the tensor.
#include "gradscope/torch/audit/attention_query_key.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;

struct Case {
  int64_t batch, heads, k_heads, queries, keys, dim;
};

// Logits [batch, heads, queries, keys] in double, loops only; -inf where hidden.
std::vector<double> loop_logits(const Case& c, const at::Tensor& q, const at::Tensor& k, const at::Tensor& mask,
                                bool causal, double scale) {
  const at::Tensor qd = q.to(at::kDouble).contiguous(), kd = k.to(at::kDouble).contiguous();
  const double* qp = qd.data_ptr<double>();
  const double* kp = kd.data_ptr<double>();
  at::Tensor m;
  if (mask.defined()) m = mask.expand({c.batch, c.heads, c.queries, c.keys}).to(at::kDouble).contiguous();
  const at::Tensor mb = mask.defined() && mask.scalar_type() == at::kBool ? m : at::Tensor();
  const int64_t group = c.heads / c.k_heads;
  std::vector<double> out;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.queries; ++i)
        for (int64_t j = 0; j < c.keys; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.dim; ++e)
            dot += qp[((b * c.heads + h) * c.queries + i) * c.dim + e] *
                   kp[((b * c.k_heads + h / group) * c.keys + j) * c.dim + e];
          double l = dot * scale;
          const int64_t at = ((b * c.heads + h) * c.queries + i) * c.keys + j;
          if (causal && j > i) l = -INFINITY;
          if (m.defined()) {
            const double v = m.data_ptr<double>()[at];
            if (mb.defined()) {
              if (v == 0) l = -INFINITY;
            } else {
              l += v;
            }
          }
          out.push_back(l);
        }
  return out;
}

struct Reference {
  double max_logit = -INFINITY, entropy_sum = 0, fraction_sum = 0;
  int64_t queries = 0, fraction_queries = 0, top = 0;
};

// Per head, a long-double softmax of each row.
std::vector<Reference> reference(const Case& c, const std::vector<double>& logits) {
  std::vector<Reference> r(static_cast<std::size_t>(c.heads));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.queries; ++i) {
        const double* row = &logits[static_cast<std::size_t>(((b * c.heads + h) * c.queries + i) * c.keys)];
        long double m = -INFINITY, z = 0, s = 0, top = 0;
        int64_t visible = 0;
        for (int64_t j = 0; j < c.keys; ++j)
          if (row[j] != -INFINITY) ++visible, m = std::max(m, static_cast<long double>(row[j]));
        if (visible == 0) continue;
        for (int64_t j = 0; j < c.keys; ++j)
          if (row[j] != -INFINITY) z += std::exp(row[j] - m);
        for (int64_t j = 0; j < c.keys; ++j) {
          if (row[j] == -INFINITY) continue;
          const long double p = std::exp(row[j] - m) / z;
          if (p > 0) s -= p * std::log(p);
          top = std::max(top, p);
        }
        Reference& ref = r[static_cast<std::size_t>(h)];
        ++ref.queries;
        ref.max_logit = std::max(ref.max_logit, static_cast<double>(m));
        ref.entropy_sum += static_cast<double>(s);
        if (visible >= 2) ++ref.fraction_queries, ref.fraction_sum += static_cast<double>(s / std::log((long double)visible));
        if (top > 0.99L) ++ref.top;
      }
  return r;
}

void expect_matches(const std::vector<HeadStats>& got, const std::vector<Reference>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t h = 0; h < got.size(); ++h) {
    SCOPED_TRACE("head " + std::to_string(h));
    EXPECT_EQ(got[h].queries, want[h].queries);
    EXPECT_EQ(got[h].fraction_queries, want[h].fraction_queries);
    EXPECT_EQ(got[h].top_queries, want[h].top);
    EXPECT_NEAR(got[h].max_logit, want[h].max_logit, 1e-5 * std::max(1.0, std::abs(want[h].max_logit)));
    EXPECT_NEAR(got[h].entropy_sum, want[h].entropy_sum, 1e-4 * static_cast<double>(want[h].queries));
    EXPECT_NEAR(got[h].entropy_fraction_sum, want[h].fraction_sum, 1e-4 * static_cast<double>(want[h].queries));
  }
}

// The loop logits mean what SDPA computes: softmax(logits) v equals its output.
void expect_sdpa_semantics(const Case& c, const at::Tensor& q, const at::Tensor& k, const at::Tensor& mask,
                           bool causal, double scale) {
  const at::Tensor v = at::randn({c.batch, c.k_heads, c.keys, 5}, at::kDouble);
  const std::vector<double> l = loop_logits(c, q, k, mask, causal, scale);
  at::Tensor logits = at::from_blob(const_cast<double*>(l.data()), {c.batch, c.heads, c.queries, c.keys}, at::kDouble);
  const at::Tensor ours = at::matmul(at::softmax(logits, -1), v.repeat_interleave(c.heads / c.k_heads, 1));
  std::optional<at::Tensor> sdpa_mask;  // a float mask in the query's dtype, as SDPA wants it
  if (mask.defined()) sdpa_mask = mask.scalar_type() == at::kBool ? mask : mask.to(at::kDouble);
  const at::Tensor sdpa = at::scaled_dot_product_attention(q.to(at::kDouble), k.to(at::kDouble), v, sdpa_mask, 0.0,
                                                           causal, scale, /*enable_gqa=*/c.heads != c.k_heads);
  EXPECT_TRUE(at::allclose(ours, sdpa, 1e-9, 1e-9)) << (ours - sdpa).abs().max().item<double>();
}

TEST(QueryKeyAttention, MatchesLogitsWrittenOutAndSdpaItself) {
  at::manual_seed(3);
  struct Variant {
    Case c;
    bool causal;
    int mask;  // 0 none, 1 bool [queries, keys], 2 float [batch, 1, 1, keys], 3 bool [batch, heads, q, k]
  };
  const std::vector<Variant> variants = {
      {{2, 4, 4, 7, 7, 8}, true, 0},   {{2, 4, 4, 5, 9, 8}, true, 0},   // causal, more keys than queries
      {{2, 8, 2, 6, 6, 4}, true, 0},   {{2, 8, 2, 6, 6, 4}, false, 1},  // grouped-query attention
      {{3, 4, 1, 4, 10, 8}, false, 2}, {{1, 2, 2, 3, 3, 4}, false, 3},  // multi-query; per-head masks
  };
  for (const Variant& v : variants) {
    const Case& c = v.c;
    SCOPED_TRACE("heads " + std::to_string(c.heads) + "/" + std::to_string(c.k_heads) + " L " +
                 std::to_string(c.queries) + " S " + std::to_string(c.keys) + " mask " + std::to_string(v.mask));
    const at::Tensor q = at::randn({c.batch, c.heads, c.queries, c.dim}) * 3;
    const at::Tensor k = at::randn({c.batch, c.k_heads, c.keys, c.dim});
    at::Tensor mask;
    if (v.mask == 1) mask = at::rand({c.queries, c.keys}) > 0.3;
    if (v.mask == 2) mask = at::where(at::rand({c.batch, 1, 1, c.keys}) > 0.4, 0.0, -INFINITY).to(at::kFloat);
    if (v.mask == 3) mask = at::rand({c.batch, c.heads, c.queries, c.keys}) > 0.5;
    // Every query sees key 0: a row with no key visible is NaN in SDPA (and not counted here).
    if (v.mask == 1 || v.mask == 3) mask.select(-1, 0).fill_(true);
    if (v.mask == 2) mask.select(-1, 0).fill_(0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.dim));
    expect_sdpa_semantics(c, q, k, mask, v.causal, scale);
    QueryKeyAttention a;
    a.query = q;
    a.key = k;
    a.mask = mask;
    a.is_causal = v.causal;
    const std::vector<Reference> want = reference(c, loop_logits(c, q, k, mask, v.causal, scale));
    expect_matches(query_key_head_stats(a, "t"), want);
    // Blocks of one query row, and of two batch rows (the last block short when the batch is
    // odd): the same statistics, merged.
    expect_matches(query_key_head_stats(a, "t", 1), want);
    expect_matches(query_key_head_stats(a, "t", 2 * c.heads * c.queries * c.keys * 4), want);
  }
}

TEST(QueryKeyAttention, ThreeDimensionalInputsScaleAndHalfPrecision) {
  at::manual_seed(4);
  const Case c{1, 3, 3, 6, 6, 16};
  const at::Tensor q = at::randn({3, 6, 16}), k = at::randn({3, 6, 16});
  QueryKeyAttention a;
  a.query = q.to(at::kBFloat16);
  a.key = k.to(at::kBFloat16);
  a.scale = 2.5;
  // The truth from the bf16 values the call holds, in double.
  const std::vector<Reference> want =
      reference(c, loop_logits(c, a.query.unsqueeze(0), a.key.unsqueeze(0), {}, false, 2.5));
  expect_matches(query_key_head_stats(a, "t"), want);
  // Inside an autocast region (bf16 training), the same float32 statistics.
  at::autocast::set_autocast_enabled(at::kCPU, true);
  std::vector<HeadStats> under_autocast;
  try {
    under_autocast = query_key_head_stats(a, "t");
  } catch (...) {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    throw;
  }
  at::autocast::set_autocast_enabled(at::kCPU, false);
  expect_matches(under_autocast, want);
}

TEST(QueryKeyAttention, TheBlockBoundTheHeaderStatesHolds) {
  // 4 heads x 4096 keys x 4 bytes = 64 KiB a query row: a 1 MiB budget takes 16 rows a block.
  at::manual_seed(5);
  QueryKeyAttention a;
  a.query = at::randn({1, 4, 64, 8});
  a.key = at::randn({1, 4, 4096, 8});
  a.is_causal = true;
  const std::vector<HeadStats> small = query_key_head_stats(a, "t", int64_t{1} << 20);
  const std::vector<HeadStats> whole = query_key_head_stats(a, "t", int64_t{1} << 30);
  for (std::size_t h = 0; h < 4; ++h) {
    EXPECT_EQ(small[h].queries, 64);
    EXPECT_DOUBLE_EQ(small[h].max_logit, whole[h].max_logit);
    EXPECT_NEAR(small[h].entropy_sum, whole[h].entropy_sum, 1e-9 * 64);
  }
}

TEST(QueryKeyAttention, BadInputIsRefusedNamingTheTensor) {
  const auto refused = [](QueryKeyAttention a, const std::string& part) {
    try {
      query_key_head_stats(a, "audit: attention of node 'attn'");
      ADD_FAILURE() << "accepted; expected: " << part;
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("audit: attention of node 'attn'"));
      EXPECT_THAT(std::string(e.what()), HasSubstr(part));
    }
  };
  QueryKeyAttention ok;
  ok.query = at::randn({2, 4, 5, 8});
  ok.key = at::randn({2, 2, 5, 8});
  EXPECT_NO_THROW(query_key_head_stats(ok, "x"));
  QueryKeyAttention a = ok;
  a.key = at::Tensor();
  refused(a, "q and k must both be given");
  a = ok;
  a.query = at::randn({4, 8});
  refused(a, "q must be [batch, heads, tokens, dim] or [heads, tokens, dim], got shape [4, 8]");
  a = ok;
  a.key = at::randn({2, 3, 5, 8});
  refused(a, "k of shape [2, 3, 5, 8] does not fit q of shape [2, 4, 5, 8]: expected k [2, heads dividing 4, keys, 8]");
  a = ok;
  a.key = at::randn({2, 2, 5, 7});
  refused(a, "expected k [2, heads dividing 4, keys, 8]");
  a = ok;
  a.key = ok.key.to(at::kDouble);
  refused(a, "q is Float and k is Double");
  a = ok;
  a.query = at::ones({2, 4, 5, 8}, at::kLong);
  refused(a, "q must be floating point, got Long");
  a = ok;
  a.mask = at::ones({3, 5}, at::kBool);
  refused(a, "mask of shape [3, 5] does not broadcast to the logits [2, 4, 5, 5]");
  a = ok;
  a.mask = at::ones({5, 5}, at::kInt);
  refused(a, "mask must be bool (true: may attend) or floating point");
  a = ok;
  a.mask = at::ones({5, 5}, at::kBool);
  a.is_causal = true;
  refused(a, "give a mask or is_causal, not both");
  a = ok;
  a.scale = std::numeric_limits<double>::quiet_NaN();
  refused(a, "scale must be finite");
}

// The audit computes nothing at the steps it does not measure: q and k on the meta device
// (shapes, no data) pass every unsampled step and fail only where the logits are computed.
TEST(QueryKeyAttention, UnsampledStepsReadNoElement) {
  ::torch::nn::Linear layer(4, 4);
  AuditOptions o;
  o.attention_every = 3;
  Audit audit({{"attn", layer.ptr()}}, o);
  QueryKeyAttention meta;
  meta.query = at::empty({1, 2, 3, 4}, at::TensorOptions().device(at::kMeta));
  meta.key = at::empty({1, 2, 3, 4}, at::TensorOptions().device(at::kMeta));
  meta.is_causal = true;
  int measured = 0;
  for (int step = 0; step < 6; ++step) {
    layer(at::randn({2, 4})).sum().backward();
    if (audit.attention_step()) {
      ++measured;
      EXPECT_ANY_THROW(audit.record_attention("attn", meta));
    } else {
      EXPECT_NO_THROW(audit.record_attention("attn", meta));
    }
    audit.step([] {});
  }
  EXPECT_EQ(measured, 2);
  // Bad shapes are refused at every call, sampled or not.
  QueryKeyAttention bad = meta;
  bad.key = at::empty({1, 3, 3, 4}, at::TensorOptions().device(at::kMeta));
  layer(at::randn({2, 4})).sum().backward();
  EXPECT_THROW(audit.record_attention("attn", bad), Error);
}

}  // namespace
}  // namespace gradscope::torch
