// SpectraMerge: exact effective ranks and CKA across ranks (spectra.h). Three
// allgathers at a step that has any: a fixed header (step, how many measurements, a hash of
// what they are, the byte bound), each measurement's row count and finiteness, then the
// payload, whose layout every rank derives from the first two, so all agree without asking.
#include "distributed/spectra.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "audit/channel_math.h"
#include "distributed/wire.h"
#include "gradscope/core/error.h"

namespace gradscope::torch::internal {

at::Tensor channel_matrix(const at::Tensor& x, int64_t dim) {
  if (dim < 0) dim += x.dim();
  int64_t samples = 1;  // counted, not -1: reshape cannot infer it with no channels
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim) samples *= x.size(d);
  return x.detach().movedim(dim, -1).reshape({samples, x.size(dim)}).to(at::kDouble, false, /*copy=*/true);
}

at::Tensor sample_matrix(const at::Tensor& x) {
  return x.detach().reshape({x.size(0), -1}).to(at::kDouble, false, /*copy=*/true);
}

CkaMoments cka_moments(const at::Tensor& x, const at::Tensor& y) {
  CkaMoments m;
  m.n = x.size(0);
  if (m.n == 0) {
    m.mean_x = at::zeros({x.size(1)}, x.options());
    m.mean_y = at::zeros({y.size(1)}, y.options());
  } else {
    m.mean_x = x.mean(0);
    m.mean_y = y.mean(0);
  }
  const at::Tensor a = x - m.mean_x, b = y - m.mean_y;
  m.xx = a.t().mm(a);
  m.yy = b.t().mm(b);
  m.yx = b.t().mm(a);
  return m;
}

CkaMoments combine(const std::vector<CkaMoments>& shards) {
  CkaMoments out;
  for (const CkaMoments& s : shards) out.n += s.n;
  if (out.n == 0) return out;
  for (const CkaMoments& s : shards) {
    if (s.n == 0) continue;
    const double w = static_cast<double>(s.n) / static_cast<double>(out.n);
    out.mean_x = out.mean_x.defined() ? out.mean_x + s.mean_x * w : s.mean_x * w;
    out.mean_y = out.mean_y.defined() ? out.mean_y + s.mean_y * w : s.mean_y * w;
  }
  // Each shard's matrices are centred by its own mean; moving them to the job's mean adds
  // n_r (mu_r - mu)(mu_r - mu)^T, with no difference of large sums (Chan, Golub & LeVeque).
  for (const CkaMoments& s : shards) {
    if (s.n == 0) continue;
    const double n = static_cast<double>(s.n);
    const at::Tensor dx = (s.mean_x - out.mean_x).unsqueeze(1), dy = (s.mean_y - out.mean_y).unsqueeze(1);
    const at::Tensor xx = s.xx + dx.mm(dx.t()) * n, yy = s.yy + dy.mm(dy.t()) * n, yx = s.yx + dy.mm(dx.t()) * n;
    out.xx = out.xx.defined() ? out.xx + xx : xx;
    out.yy = out.yy.defined() ? out.yy + yy : yy;
    out.yx = out.yx.defined() ? out.yx + yx : yx;
  }
  return out;
}

double linear_cka(const CkaMoments& m) {
  if (m.n == 0) return std::nan("");
  const double cross = m.yx.pow(2).sum().item<double>();
  const double self_x = m.xx.pow(2).sum().item<double>(), self_y = m.yy.pow(2).sum().item<double>();
  if (!(self_x > 0) || !(self_y > 0)) return std::nan("");
  return cross / std::sqrt(self_x * self_y);
}

namespace {

constexpr int64_t kSpectraMagic = 0x5350454354524131;  // "SPECTRA1"
constexpr int64_t kHeader = 5;                  // magic, step, count, layout hash, max bytes

enum class Route { kNaN, kLocal, kStatistics, kRows };

uint64_t fnv(uint64_t h, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Rank r's block of `all[r]` at `offset`, as [rows, cols].
at::Tensor block(const at::Tensor& buffer, int64_t offset, int64_t rows, int64_t cols) {
  return buffer.narrow(0, offset, rows * cols).view({rows, cols});
}

void put(at::Tensor& payload, int64_t& offset, const at::Tensor& t) {
  const at::Tensor flat = t.reshape({-1});
  payload.narrow(0, offset, flat.numel()).copy_(flat);
  offset += flat.numel();
}

}  // namespace

SpectraMerge::SpectraMerge(ProcessGroupPtr group, std::string who, int64_t max_bytes)
    : group_(std::move(group)), who_(std::move(who)), max_bytes_(max_bytes) {}

void SpectraMerge::add_rank(const std::string& node, const at::Tensor& x, int64_t dim) {
  const std::string key = "node '" + node + "': effective rank";
  items_.erase(std::remove_if(items_.begin(), items_.end(), [&](const Item& i) { return i.key == key; }), items_.end());
  items_.push_back({key, channel_matrix(x, dim), {}, {}, node});
}

void SpectraMerge::add_similarity(std::vector<std::size_t> records, const at::Tensor& x, const at::Tensor& y) {
  GRADSCOPE_INTERNAL_ASSERT(!records.empty());
  items_.push_back({"", sample_matrix(x), sample_matrix(y), std::move(records), ""});
}

void SpectraMerge::merge(StepRecords& step, std::vector<std::string>& warnings) {
  std::vector<Item> items = std::move(items_);
  items_.clear();
  const JobInfo job = job_info(group_);
  for (Item& i : items)
    if (!i.records.empty()) {
      GRADSCOPE_INTERNAL_ASSERT(i.records[0] < step.similarities.size());
      const SimilarityRecord& s = step.similarities[i.records[0]];
      i.key = "node '" + s.node + "': CKA " + (s.other.find(" vs ") == std::string::npos ? "with '" + s.other + "'" : s.other);
    }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
  const auto count = static_cast<int64_t>(items.size());
  uint64_t hash = 1469598103934665603ull;
  for (const Item& i : items) {
    hash = fnv(hash, i.key.data(), i.key.size() + 1);
    const int64_t dims[2] = {i.a.size(1), i.b.defined() ? i.b.size(1) : -1};
    hash = fnv(hash, dims, sizeof dims);
  }

  // 1: what every rank measured, in a header of one size, so a difference is named, not hung on.
  at::Tensor header = at::empty({kHeader}, at::kLong);
  int64_t* h = header.data_ptr<int64_t>();
  h[0] = kSpectraMagic, h[1] = step.step, h[2] = count, h[3] = static_cast<int64_t>(hash), h[4] = max_bytes_;
  const std::string what = "the effective ranks and similarities of step " + std::to_string(step.step);
  const std::vector<at::Tensor> headers = allgather_buffer(group_, header, who_, "the merge of " + what);
  for (int r = 1; r < job.world_size; ++r) {
    const int64_t* o = headers[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    const int64_t* first = headers[0].data_ptr<int64_t>();
    if (std::equal(o, o + kHeader, first)) continue;
    if (o[1] != first[1] || o[4] != first[4]) {
      const std::string why = o[1] != first[1]
                                  ? "is at step " + std::to_string(o[1]) + " and rank 0 at step " + std::to_string(first[1])
                                  : "has merge_spectra_max_bytes " + std::to_string(o[4]) + " and rank 0 " + std::to_string(first[4]);
      throw Error(who_ + ": ranks disagree on " + what + ": rank " + std::to_string(r) + " " + why +
                  "; every rank needs the same options and the same channel counts");
    }
    // Other measurements: every rank exchanges what it measured (a collective every rank
    // enters: every rank sees the same headers) and names the difference.
    std::vector<std::string> ids, sizes;
    for (const Item& i : items) {
      // "node 'a': effective rank" -> "a, effective rank" (describe_difference splits at ": ").
      const std::size_t end = i.key.find("': ");
      ids.push_back(i.key.substr(6, end - 6) + ", " + i.key.substr(end + 3));
      sizes.push_back(i.b.defined() ? std::to_string(i.a.size(1)) + " and " + std::to_string(i.b.size(1)) + " features"
                                    : std::to_string(i.a.size(1)) + " channels");
    }
    const std::vector<std::string> texts = allgather_text(group_, internal::join_nodes(ids, sizes), who_, "the merge of " + what);
    throw Error(who_ + ": ranks disagree on " + what + ": " + internal::describe_difference(texts) +
                "; every rank needs the same options and the same channel counts");
  }
  last_bytes_ = 8 * kHeader;
  if (count == 0) return;

  // 2: each measurement's rows and finiteness on every rank: they decide each one's route.
  at::Tensor rows = at::empty({2 * count}, at::kLong);
  int64_t* row_words = rows.data_ptr<int64_t>();
  for (int64_t k = 0; k < count; ++k) {
    const Item& i = items[static_cast<std::size_t>(k)];
    row_words[2 * k] = i.a.size(0);
    row_words[2 * k + 1] = static_cast<int64_t>(i.a.isfinite().all().item<bool>() && (!i.b.defined() || i.b.isfinite().all().item<bool>()));
  }
  const std::vector<at::Tensor> all_rows = allgather_buffer(group_, rows, who_, "the merge of " + what);
  last_bytes_ += 8 * 2 * count;
  std::vector<Route> route(items.size());
  std::vector<int64_t> offset(items.size()), longest(items.size());
  std::vector<std::vector<int64_t>> n(items.size());
  int64_t words = 0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& i = items[k];
    bool finite = true;
    int64_t total = 0;
    for (const at::Tensor& t : all_rows) {
      const int64_t* w = t.data_ptr<int64_t>() + 2 * k;
      n[k].push_back(w[0]);
      total += w[0];
      longest[k] = std::max(longest[k], w[0]);
      finite = finite && w[1];
    }
    // NaN/Inf anywhere, or no sample anywhere: NaN, as for one process.
    if (!finite || total == 0) {
      route[k] = Route::kNaN;
      continue;
    }
    const int64_t d1 = i.a.size(1), d2 = i.b.defined() ? i.b.size(1) : 0;
    const int64_t statistics = i.b.defined() ? d1 + d2 + d1 * d1 + d2 * d2 + d1 * d2 : d1 * d1;
    const int64_t by_rows = longest[k] * (d1 + d2);
    const int64_t need = std::min(statistics, by_rows);
    if (8 * (words + need) > max_bytes_) {
      route[k] = Route::kLocal;
      if (warned_.insert(i.key).second)
        warnings.push_back(i.key + ": not merged across ranks (" + std::to_string(8 * need) +
                           " bytes a rank, over merge_spectra_max_bytes " + std::to_string(max_bytes_) +
                           "); the value is each rank's own");
      continue;
    }
    route[k] = by_rows < statistics ? Route::kRows : Route::kStatistics;
    offset[k] = words;
    words += need;
  }

  // 3: the payload: per measurement this rank's statistics, or its rows padded to the longest.
  std::vector<at::Tensor> all;
  if (words > 0) {
    at::Tensor payload = at::zeros({words}, at::kDouble);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Item& i = items[k];
      int64_t at = offset[k];
      if (route[k] == Route::kStatistics && !i.b.defined()) {
        put(payload, at, i.a.t().mm(i.a).cpu());
      } else if (route[k] == Route::kStatistics) {
        const CkaMoments m = cka_moments(i.a, i.b);
        for (const at::Tensor& t : {m.mean_x, m.mean_y, m.xx, m.yy, m.yx}) put(payload, at, t.cpu());
      } else if (route[k] == Route::kRows) {
        const int64_t d1 = i.a.size(1), d2 = i.b.defined() ? i.b.size(1) : 0;
        block(payload, at, i.a.size(0), d1).copy_(i.a.cpu());
        if (i.b.defined()) block(payload, at + longest[k] * d1, i.b.size(0), d2).copy_(i.b.cpu());
      }
    }
    all = allgather_buffer(group_, payload, who_, "the merge of " + what);
    last_bytes_ += 8 * words;
  }

  // Every rank combines every rank's part in rank order: the same value on every rank.
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& i = items[k];
    const int64_t d1 = i.a.size(1), d2 = i.b.defined() ? i.b.size(1) : 0;
    double value = std::nan("");
    if (route[k] == Route::kLocal) continue;
    if (route[k] == Route::kStatistics && !i.b.defined()) {
      at::Tensor gram;
      for (const at::Tensor& t : all) {
        const at::Tensor g = block(t, offset[k], d1, d1);
        gram = gram.defined() ? gram + g : g.clone();
      }
      value = effective_rank_of_gram(gram);
    } else if (route[k] == Route::kStatistics) {
      std::vector<CkaMoments> shards;
      for (std::size_t r = 0; r < all.size(); ++r) {
        int64_t at = offset[k];
        CkaMoments m;
        m.n = n[k][r];
        m.mean_x = block(all[r], at, 1, d1).view({d1}), at += d1;
        m.mean_y = block(all[r], at, 1, d2).view({d2}), at += d2;
        m.xx = block(all[r], at, d1, d1), at += d1 * d1;
        m.yy = block(all[r], at, d2, d2), at += d2 * d2;
        m.yx = block(all[r], at, d2, d1);
        shards.push_back(m);
      }
      value = linear_cka(combine(shards));
    } else if (route[k] == Route::kRows) {
      std::vector<at::Tensor> xs, ys;
      for (std::size_t r = 0; r < all.size(); ++r) {
        xs.push_back(block(all[r], offset[k], n[k][r], d1));
        if (i.b.defined()) ys.push_back(block(all[r], offset[k] + longest[k] * d1, n[k][r], d2));
      }
      value = i.b.defined() ? internal::linear_cka(at::cat(xs), at::cat(ys)) : effective_rank(at::cat(xs), 1);
    }
    if (i.b.defined()) {
      for (std::size_t r : i.records) step.similarities[r].cka = value;
    } else {
      for (ChannelRecord& c : step.channels)
        if (c.node == i.node) c.effective_rank = value;
    }
  }
}

}  // namespace gradscope::torch::internal
