// EmbeddingRankMerge: a tracked step's touched rows, merged across ranks.
//
// Why only the rows and their counts travel: in data-parallel training the table is replicated
// and its gradient averaged, so every rank already holds the job's gradient and values of every
// row; what a rank lacks is which rows the others looked up. Once every rank steps the union,
// each rank's velocity, oscillation and SNR state is the job's, with no per-row floats on the
// wire. The gradient hashes check that premise on the rows several ranks touched.
#include "embedding_ranks.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cstring>

#include "gradscope/core/error.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

constexpr int64_t kMagic = 0x67736d6265646472;  // distinct from the audit's buffers
constexpr int64_t kHeader = 6;                   // magic, step, rows, dim, count, capacity
constexpr int64_t kRowWords = 4;                 // row, lookups, negatives, gradient hash

std::string shape(const int64_t* b) { return "[" + std::to_string(b[2]) + ", " + std::to_string(b[3]) + "]"; }

}  // namespace

uint64_t hash_row(const float* row, int64_t dim) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(row);
  for (std::size_t i = 0, n = static_cast<std::size_t>(dim) * sizeof(float); i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h | 1;  // never 0, which stands for "no gradient"
}

EmbeddingRankMerge::EmbeddingRankMerge(ProcessGroupPtr group, std::string who, int64_t rows, int64_t dim)
    : group_(std::move(group)), who_(std::move(who)) {
  if (!group_) throw Error(who_ + ": process_group is null");
  job_ = job_info(group_);
  at::Tensor mine = at::zeros({kHeader}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kMagic;
  w[2] = rows;
  w[3] = dim;
  check_tables(allgather_buffer(group_, mine, who_, "the table check"));
}

void EmbeddingRankMerge::check_tables(const std::vector<at::Tensor>& all) const {
  const int64_t* first = all[0].data_ptr<int64_t>();
  for (int r = 1; r < job_.world_size; ++r) {
    const int64_t* b = all[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    GRADSCOPE_INTERNAL_ASSERT(b[0] == kMagic);
    if (b[2] != first[2] || b[3] != first[3])
      throw Error(who_ + ": ranks disagree on the table: rank 0 has " + shape(first) + " but rank " +
                  std::to_string(r) + " has " + shape(b));
  }
}

bool EmbeddingRankMerge::merge(int64_t step, int64_t rows, int64_t dim, TouchedRows& touched,
                               const std::vector<uint64_t>& hashes) {
  const std::vector<int64_t>& t = touched.rows();
  const auto count = static_cast<int64_t>(t.size());
  GRADSCOPE_INTERNAL_ASSERT(hashes.size() == t.size());
  const std::string what = "the merge of the touched rows of step " + std::to_string(step);
  std::vector<at::Tensor> all;
  for (;;) {
    at::Tensor mine = at::empty({kHeader + capacity_ * kRowWords}, at::kLong);
    int64_t* w = mine.data_ptr<int64_t>();
    const int64_t sent = std::min(count, capacity_);
    const int64_t header[kHeader] = {kMagic, step, rows, dim, count, capacity_};
    std::memcpy(w, header, sizeof header);
    for (int64_t k = 0; k < sent; ++k) {
      int64_t* o = w + kHeader + k * kRowWords;
      o[0] = t[k];
      o[1] = touched.lookups()[k];
      o[2] = touched.negatives()[k];
      o[3] = static_cast<int64_t>(hashes[k]);
    }
    all = allgather_buffer(group_, mine, who_, what);
    int64_t most = 0;
    for (const at::Tensor& b : all) most = std::max(most, b.data_ptr<int64_t>()[4]);
    if (most <= capacity_) break;
    // Some rank touched more rows than fit: every rank saw the same counts, so every rank
    // grows alike and sends again.
    while (capacity_ < most) capacity_ *= 2;
  }

  // The same table (a weight may have been replaced since) and the same step everywhere, or
  // the merge would mix different rows.
  check_tables(all);
  const int64_t* first = all[0].data_ptr<int64_t>();
  for (int r = 1; r < job_.world_size; ++r) {
    const int64_t* b = all[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    if (b[1] != first[1])
      throw Error(who_ + ": ranks are at different steps (rank 0 at step " + std::to_string(first[1]) +
                  ", rank " + std::to_string(r) + " at step " + std::to_string(b[1]) +
                  "); every rank needs the same track_every and one step() per training step");
  }

  // A merge of the ranks' ascending lists, in rank order.
  std::vector<int64_t> cursor(all.size(), 0);
  std::vector<int64_t> out_rows;
  std::vector<uint32_t> out_lookups, out_negatives;
  bool same = true;
  for (;;) {
    int64_t next = -1;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const int64_t* b = all[r].data_ptr<int64_t>();
      if (cursor[r] < b[4]) {
        const int64_t row = b[kHeader + cursor[r] * kRowWords];
        if (next < 0 || row < next) next = row;
      }
    }
    if (next < 0) break;
    uint64_t lookups = 0, negatives = 0;
    int64_t hash = 0;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const int64_t* b = all[r].data_ptr<int64_t>();
      if (cursor[r] >= b[4]) continue;
      const int64_t* e = b + kHeader + cursor[r] * kRowWords;
      if (e[0] != next) continue;
      lookups += static_cast<uint64_t>(e[1]);
      negatives += static_cast<uint64_t>(e[2]);
      if (hash == 0) hash = e[3];
      else if (e[3] != 0 && e[3] != hash) same = false;
      ++cursor[r];
    }
    out_rows.push_back(next);
    out_lookups.push_back(static_cast<uint32_t>(std::min<uint64_t>(lookups, UINT32_MAX)));
    out_negatives.push_back(static_cast<uint32_t>(std::min<uint64_t>(negatives, UINT32_MAX)));
  }
  touched.assign(std::move(out_rows), std::move(out_lookups), std::move(out_negatives));
  return same;
}

}  // namespace gradscope::torch
