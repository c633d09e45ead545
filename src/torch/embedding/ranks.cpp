// EmbeddingRankMerge: a tracked step's touched rows, merged across ranks.
//
// Why only the rows and their counts travel: in data-parallel training the table is replicated
// and its gradient averaged, so every rank already holds the job's gradient and values of every
// row; what a rank lacks is which rows the others looked up. Once every rank steps the union,
// each rank's velocity, oscillation and SNR state is the job's, with no per-row floats on the
// wire. The gradient hashes check that premise on the rows several ranks touched.
#include "embedding/ranks.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cstring>

#include "gradscope/core/error.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

// A buffer: kHeader words, kTableWords per table, then `capacity` rows of kRowWords, the tables'
// rows one after the other (each table's count says where its rows end).
constexpr int64_t kMagic = 0x67736d6265646472;       // distinct from the audit's buffers
constexpr int64_t kCheckMagic = 0x67736d6265646473;  // the table check at construction
constexpr int64_t kHeader = 3;                       // magic, tables, capacity
constexpr int64_t kTableWords = 5;                   // step, rows, dim, count, tracked
constexpr int64_t kRowWords = 4;                     // row, lookups, negatives, gradient hash
constexpr int64_t kCheckWords = 6;                   // check magic, 0, rows, dim, 0, 0

std::string shape(int64_t rows, int64_t dim) { return "[" + std::to_string(rows) + ", " + std::to_string(dim) + "]"; }

const int64_t* table_of(const at::Tensor& b, std::size_t i) {
  return b.data_ptr<int64_t>() + kHeader + static_cast<int64_t>(i) * kTableWords;
}

std::string at_step(const int64_t* t) {
  return "step " + std::to_string(t[0]) + (t[4] ? "" : " (not tracked)");
}

}  // namespace

uint64_t hash_row(const float* row, int64_t dim) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(row);
  for (std::size_t i = 0, n = static_cast<std::size_t>(dim) * sizeof(float); i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h | 1;  // never 0, which stands for "no gradient"
}

EmbeddingRankMerge::EmbeddingRankMerge(ProcessGroupPtr group) : group_(std::move(group)) {
  if (!group_) throw Error("embedding: process_group is null");
  job_ = job_info(group_);
}

void EmbeddingRankMerge::check_table(const std::string& who, int64_t rows, int64_t dim) {
  at::Tensor mine = at::zeros({kCheckWords}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kCheckMagic;
  w[2] = rows;
  w[3] = dim;
  const std::vector<at::Tensor> all = allgather_buffer(group_, mine, who, "the table check");
  const int64_t* first = all[0].data_ptr<int64_t>();
  for (int r = 1; r < job_.world_size; ++r) {
    const int64_t* b = all[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    if (b[0] != kCheckMagic || first[0] != kCheckMagic)
      throw Error(who + ": ranks are out of step: rank " + std::to_string(b[0] != kCheckMagic ? r : 0) +
                  " is not constructing a tracker when the others are (construct every tracker on every rank)");
    if (b[2] != first[2] || b[3] != first[3])
      throw Error(who + ": ranks disagree on the table: rank 0 has " + shape(first[2], first[3]) + " but rank " +
                  std::to_string(r) + " has " + shape(b[2], b[3]));
  }
}

void EmbeddingRankMerge::check(const std::vector<at::Tensor>& all, const std::vector<RanksTable*>& tables,
                               const std::string& who) const {
  const int64_t* first = all[0].data_ptr<int64_t>();
  for (int r = 0; r < job_.world_size; ++r) {
    const int64_t* b = all[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    if (b[0] != kMagic)
      throw Error(who + ": ranks are out of step: rank " + std::to_string(r) +
                  " is not merging touched rows when this rank is (construct and step every tracker on every rank)");
    if (b[1] != first[1] || b[2] != first[2])
      throw Error(who + ": ranks merge different tables together (rank 0 " + std::to_string(first[1]) +
                  " tables, rank " + std::to_string(r) + " " + std::to_string(b[1]) +
                  "); every rank needs the same tables in its hub, in the same process groups");
  }
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const int64_t* t0 = table_of(all[0], i);
    for (int r = 1; r < job_.world_size; ++r) {
      const int64_t* t = table_of(all[static_cast<std::size_t>(r)], i);
      // The same table (a weight may have been replaced since) and the same step everywhere,
      // or the merge would mix different rows.
      if (t[1] != t0[1] || t[2] != t0[2])
        throw Error(tables[i]->who + ": ranks disagree on the table: rank 0 has " + shape(t0[1], t0[2]) +
                    " but rank " + std::to_string(r) + " has " + shape(t[1], t[2]));
      if (t[0] != t0[0] || t[4] != t0[4])
        throw Error(tables[i]->who + ": ranks are at different steps (rank 0 at " + at_step(t0) + ", rank " +
                    std::to_string(r) + " at " + at_step(t) +
                    "); every rank needs the same track_every and one step() per training step");
    }
  }
}

void EmbeddingRankMerge::merge(const std::vector<RanksTable*>& tables) {
  GRADSCOPE_INTERNAL_ASSERT(!tables.empty());
  // A lone table's errors name it as the tracker does ("embedding 'items'"); a hub's name each
  // table of the collective ("embeddings 'items', 'users'").
  std::string who = tables[0]->who;
  if (tables.size() > 1) {
    const std::string prefix = "embedding ";
    who = "embeddings ";
    for (std::size_t i = 0; i < tables.size(); ++i) {
      GRADSCOPE_INTERNAL_ASSERT(tables[i]->who.compare(0, prefix.size(), prefix) == 0);
      who += (i ? ", " : "") + tables[i]->who.substr(prefix.size());
    }
  }
  int64_t step = tables[0]->step, total = 0;
  for (const RanksTable* t : tables) {
    GRADSCOPE_INTERNAL_ASSERT(!t->tracked || (t->touched && t->hashes.size() == t->touched->rows().size()));
    if (t->tracked) total += static_cast<int64_t>(t->touched->rows().size());
  }
  const std::string what = "the merge of the touched rows of step " + std::to_string(step);
  const auto n = static_cast<int64_t>(tables.size());
  std::vector<at::Tensor> all;
  for (bool first_round = true;; first_round = false) {
    at::Tensor mine = at::zeros({kHeader + n * kTableWords + capacity_ * kRowWords}, at::kLong);
    int64_t* w = mine.data_ptr<int64_t>();
    w[0] = kMagic;
    w[1] = n;
    w[2] = capacity_;
    int64_t* o = w + kHeader + n * kTableWords;
    int64_t sent = 0;  // rows in the buffer so far, all tables
    for (int64_t i = 0; i < n; ++i) {
      const RanksTable& t = *tables[static_cast<std::size_t>(i)];
      const int64_t count = t.tracked ? static_cast<int64_t>(t.touched->rows().size()) : 0;
      const int64_t header[kTableWords] = {t.step, t.rows, t.dim, count, t.tracked ? 1 : 0};
      std::memcpy(w + kHeader + i * kTableWords, header, sizeof header);
      for (int64_t k = 0; k < count && sent < capacity_; ++k, ++sent, o += kRowWords) {
        o[0] = t.touched->rows()[k];
        o[1] = t.touched->lookups()[k];
        o[2] = t.touched->negatives()[k];
        o[3] = static_cast<int64_t>(t.hashes[k]);
      }
    }
    all = allgather_buffer(group_, mine, who, what);
    // Checked on the first round, so that ranks that disagree throw before any grows.
    if (first_round) check(all, tables, who);
    int64_t most = total;
    for (const at::Tensor& b : all) {
      int64_t rows = 0;
      for (int64_t i = 0; i < n; ++i) rows += table_of(b, static_cast<std::size_t>(i))[3];
      most = std::max(most, rows);
    }
    if (most <= capacity_) break;
    // Some rank touched more rows than fit: every rank saw the same counts, so every rank
    // grows alike and sends again.
    while (capacity_ < most) capacity_ *= 2;
  }

  // Per table, a merge of the ranks' ascending lists, in rank order. Rank r's rows of table i
  // follow its rows of the tables before i.
  std::vector<int64_t> start(all.size(), 0);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    RanksTable& table = *tables[i];
    std::vector<const int64_t*> at(all.size());
    std::vector<int64_t> left(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
      at[r] = all[r].data_ptr<int64_t>() + kHeader + n * kTableWords + start[r] * kRowWords;
      left[r] = table_of(all[r], i)[3];
      start[r] += left[r];
    }
    if (!table.tracked) continue;
    std::vector<int64_t> out_rows;
    std::vector<uint32_t> out_lookups, out_negatives;
    table.same = true;
    for (;;) {
      int64_t next = -1;
      for (std::size_t r = 0; r < all.size(); ++r)
        if (left[r] > 0 && (next < 0 || at[r][0] < next)) next = at[r][0];
      if (next < 0) break;
      uint64_t lookups = 0, negatives = 0;
      int64_t hash = 0;
      for (std::size_t r = 0; r < all.size(); ++r) {
        if (left[r] == 0 || at[r][0] != next) continue;
        lookups += static_cast<uint64_t>(at[r][1]);
        negatives += static_cast<uint64_t>(at[r][2]);
        if (hash == 0) hash = at[r][3];
        else if (at[r][3] != 0 && at[r][3] != hash) table.same = false;
        at[r] += kRowWords;
        --left[r];
      }
      out_rows.push_back(next);
      out_lookups.push_back(static_cast<uint32_t>(std::min<uint64_t>(lookups, UINT32_MAX)));
      out_negatives.push_back(static_cast<uint32_t>(std::min<uint64_t>(negatives, UINT32_MAX)));
    }
    table.touched->assign(std::move(out_rows), std::move(out_lookups), std::move(out_negatives));
  }
}

}  // namespace gradscope::torch
