// What the many-process embedding tests share: the job's lookups of a step, a rank's shard of
// them, a tracker's state as exact text, and a process group that counts its allgathers (the
// collectives the trackers make).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gradscope/torch/embedding/tracker.h"

namespace gradscope::test {

/// Step `step`'s indices of the whole job in [0, range): 24 lookups or 8 negatives, the same in
/// every process; `seed` tells tables apart.
inline std::vector<int64_t> job_indices(int step, bool negatives, int64_t range = 40, uint64_t seed = 0) {
  std::mt19937_64 gen(static_cast<uint64_t>(step) * 2 + negatives + seed * 1000);
  std::vector<int64_t> ids(negatives ? 8 : 24);
  for (int64_t& i : ids) i = static_cast<int64_t>(gen() % static_cast<uint64_t>(range));
  return ids;
}

/// Every world-th index from `rank` (rank 0 of world 1: all of them).
inline at::Tensor shard(const std::vector<int64_t>& ids, int rank, int world) {
  std::vector<int64_t> mine;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(world)) == rank) mine.push_back(ids[i]);
  return at::tensor(mine, at::kLong);
}

/// Per row: every piece of state, doubles as exact hex; then the diagnostics' types and the
/// dead-row evidence.
inline std::string dump(const torch::EmbeddingTracker& t) {
  std::ostringstream out;
  const EmbeddingRows& r = t.rows();
  char line[256];
  for (int64_t i = 0; i < r.rows(); ++i) {
    std::snprintf(line, sizeof line, "%lld %u %u %u %d %u %u %u %a %a %a\n", static_cast<long long>(i),
                  r.exposure(i), r.lookups(i), r.negatives(i), r.last_seen(i), r.updates(i), r.gradients(i),
                  r.cosines(i), static_cast<double>(r.velocity(i)), static_cast<double>(r.oscillation(i)), r.snr(i));
    out << line;
  }
  for (const EmbeddingDiagnostic& d : t.report().diagnostics) {
    out << "D " << d.type;
    if (d.type == "DEAD_ROWS")
      for (const auto& [name, value] : d.evidence) out << " " << name << "=" << value;
    out << "\n";
  }
  return out.str();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A process group that forwards to another and counts the allgathers made through it.
class CountingGroup : public c10d::ProcessGroup {
 public:
  explicit CountingGroup(c10::intrusive_ptr<c10d::ProcessGroup> inner)
      : ProcessGroup(inner->getRank(), inner->getSize()), inner_(std::move(inner)) {}
  const std::string getBackendName() const override { return inner_->getBackendName(); }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                                           const c10d::AllgatherOptions& o) override {
    ++allgathers;
    return inner_->allgather(out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t, const c10d::AllreduceOptions& o) override {
    return inner_->allreduce(t, o);
  }
  int64_t allgathers = 0;

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> inner_;
};

}  // namespace gradscope::test
