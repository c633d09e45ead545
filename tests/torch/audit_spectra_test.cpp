// Effective ranks and CKA across processes: 2 and 4 Gloo workers of this program on loopback,
// each fed its own (unevenly sized) rows, against one process fed the concatenated batches.
// Each worker writes its audit's effective ranks and similarities to <dir>/rank<r>.txt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "../common/ranks.h"
#include "../common/rank_test_main.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;
constexpr int kSteps = 3;

int64_t rows_of(int rank) { return 6 + rank; }  // uneven shards: the merge pads them
int64_t job_rows(int world) {
  int64_t n = 0;
  for (int r = 0; r < world; ++r) n += rows_of(r);
  return n;
}

// "E step node value" per channel record, "S step node other value" per similarity, and
// "W warning" lines; values as %a.
void write_measures(const Audit& audit, const std::string& path) {
  std::ofstream out(path);
  char line[512];
  for (const ChannelRecord& c : audit.channel_records()) {
    std::snprintf(line, sizeof line, "E %lld %s %a\n", static_cast<long long>(c.step), c.node.c_str(), c.effective_rank);
    out << line;
  }
  for (const SimilarityRecord& s : audit.similarity_records()) {
    std::snprintf(line, sizeof line, "S %lld %s %s %a\n", static_cast<long long>(s.step), s.node.c_str(), s.other.c_str(), s.cka);
    out << line;
  }
  for (const std::string& w : audit.warnings()) out << "W " << w << "\n";
}

struct Measures {
  std::map<std::string, double> values;  // "E step node" / "S step node other" -> value
  std::vector<std::string> warnings;
};

Measures read_measures(const std::string& path) {
  Measures m;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line[0] == 'W') {
      m.warnings.push_back(line.substr(2));
      continue;
    }
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string s; f >> s;) w.push_back(s);
    std::string k;
    for (std::size_t i = 0; i + 1 < w.size(); ++i) k += (i ? " " : "") + w[i];
    m.values[k] = std::strtod(w.back().c_str(), nullptr);
  }
  return m;
}

// Worker, or with world 0 the one process fed every rank's rows ("single:<world>"). Modes:
// "spectra" (channel views with two groups on both nodes, a leakage pair, gradients summed),
// "nobytes" (the same with merge_spectra_max_bytes 0), "nan" (rank 1 feeds a NaN at step 1),
// "channels" (a view along the batch dimension, whose size differs between ranks).
int run_worker(const std::string& mode, int rank, int world, const std::string& dir) {
  const bool single = world == 0;
  const int job = single ? std::stoi(mode.substr(mode.find(':') + 1)) : world;
  ProcessGroupPtr group;
  if (!single) group = test::make_group(dir, rank, world, std::chrono::milliseconds(10000));
  ::torch::manual_seed(1);
  ::torch::nn::Sequential model(::torch::nn::Linear(6, 8), ::torch::nn::Tanh(), ::torch::nn::Linear(8, 4));
  model->to(at::kDouble);
  ::torch::optim::SGD sgd(model->parameters(), 0.05);
  AuditOptions options;
  options.process_group = group;
  options.channels_all_nodes = ChannelView{mode == "channels" ? 0 : 1, 1, {{0, 2}, {2, 4}}};
  options.leakage_pairs = {{"0", "2"}};
  options.leakage_every = 1;
  options.ranks_average_gradients = false;  // the ranks sum their gradients of a summed loss
  if (mode == "nobytes") options.merge_spectra_max_bytes = 0;
  std::ofstream err(dir + "/rank" + std::to_string(rank) + ".err");
  try {
    Audit audit(model, options);
    for (int step = 0; step < kSteps; ++step) {
      ::torch::manual_seed(100 + step);
      at::Tensor x = ::torch::randn({job_rows(job), 6}, at::kDouble) * 2;
      if (!single) {
        int64_t begin = 0;
        for (int r = 0; r < rank; ++r) begin += rows_of(r);
        x = x.narrow(0, begin, rows_of(rank)).clone();
      }
      if (mode == "nan" && rank == 1 && step == 1) x[0][2] = NAN;
      sgd.zero_grad();
      (audit.forward(model, x).pow(2).sum() * 0.5).backward();
      for (at::Tensor& p : model->parameters())
        if (!single) {
          std::vector<at::Tensor> g{p.grad()};
          group->allreduce(g)->wait();
        }
      audit.step(sgd);
    }
    write_measures(audit, dir + "/rank" + std::to_string(rank) + ".txt");
  } catch (const Error& e) {
    err << e.what() << "\n";
    return 3;
  }
  return 0;
}

std::vector<int> run_job(const std::string& mode, int world, const std::string& dir) {
  return test::wait_workers(test::start_workers(mode, world, dir), 120);
}

Measures one_process(int world) {
  const test::TempDir scratch("gs-spectra-ref");
  EXPECT_EQ(run_worker("single:" + std::to_string(world), 0, 0, scratch.path), 0);
  return read_measures(scratch.path + "/rank0.txt");
}

class MergedSpectra : public ::testing::TestWithParam<int> {};

TEST_P(MergedSpectra, EffectiveRanksAndCkaEqualOneProcessFedTheConcatenatedBatches) {
  const int world = GetParam();
  const test::TempDir scratch("gs-spectra");
  EXPECT_THAT(run_job("spectra", world, scratch.path), ::testing::Each(0));
  const Measures ref = one_process(world);
  // Per step: two effective ranks, a group pair on each node, the leakage pair both ways.
  ASSERT_EQ(ref.values.size(), static_cast<std::size_t>(kSteps * (2 + 2 + 2)));
  for (int r = 0; r < world; ++r) {
    const Measures got = read_measures(scratch.path + "/rank" + std::to_string(r) + ".txt");
    ASSERT_EQ(got.values.size(), ref.values.size()) << "rank " << r;
    EXPECT_TRUE(got.warnings.empty());
    for (const auto& [k, want] : ref.values) {
      ASSERT_TRUE(got.values.count(k)) << k;
      ASSERT_TRUE(std::isfinite(want)) << k;
      EXPECT_NEAR(got.values.at(k), want, 1e-9 * std::abs(want)) << k << " rank " << r;
    }
  }
  // Each rank alone measures something else: the merge is what makes them equal.
  const test::TempDir local("gs-spectra");
  EXPECT_THAT(run_job("nobytes", world, local.path), ::testing::Each(0));
  const Measures own = read_measures(local.path + "/rank0.txt");
  int differ = 0;
  for (const auto& [k, want] : ref.values) differ += std::abs(own.values.at(k) - want) > 1e-6 * std::abs(want);
  EXPECT_EQ(differ, static_cast<int>(ref.values.size()));
  // The warnings name what each would have cost: the smaller of the statistics and the rows
  // (padded to the longest rank's). Node "0": 8 channels, 8 x 8 Gram or the rows; the pair:
  // 8 + 4 features, 8 + 4 + 64 + 16 + 32 statistics or the rows.
  const int64_t longest = rows_of(world - 1);
  const auto says = [&](const std::string& what, int64_t words) {
    return ::testing::Contains(HasSubstr(what + ": not merged across ranks (" + std::to_string(8 * words) +
                                         " bytes a rank, over merge_spectra_max_bytes 0)"));
  };
  EXPECT_THAT(own.warnings, says("node '0': effective rank", std::min<int64_t>(64, longest * 8)));
  EXPECT_THAT(own.warnings, says("node '2': effective rank", 16));
  EXPECT_THAT(own.warnings, says("node '0': CKA with '2'", std::min<int64_t>(124, longest * 12)));
  EXPECT_THAT(own.warnings, says("node '0': CKA 0[0:2] vs 0[2:4]", 16));
}

INSTANTIATE_TEST_SUITE_P(Distributed, MergedSpectra, ::testing::Values(2, 4));

TEST(DistributedSpectra, NanOnOneRankIsNanForTheJobOnEveryRank) {
  const test::TempDir scratch("gs-spectra");
  EXPECT_THAT(run_job("nan", 2, scratch.path), ::testing::Each(0));
  for (int r = 0; r < 2; ++r) {
    const Measures got = read_measures(scratch.path + "/rank" + std::to_string(r) + ".txt");
    EXPECT_TRUE(std::isnan(got.values.at("E 1 0"))) << r;
    EXPECT_TRUE(std::isnan(got.values.at("S 1 0 2"))) << r;
    EXPECT_TRUE(std::isnan(got.values.at("S 1 0 0[0:2] vs 0[2:4]"))) << r;
    EXPECT_TRUE(std::isfinite(got.values.at("E 0 0"))) << r;  // before it
  }
}

TEST(DistributedSpectra, RanksWithOtherChannelCountsFailNamingItRatherThanHang) {
  const test::TempDir scratch("gs-spectra");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(run_job("channels", 2, scratch.path), ::testing::Each(3));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);  // the timeout
  for (int r = 0; r < 2; ++r) {
    std::ifstream in(scratch.path + "/rank" + std::to_string(r) + ".err");
    const std::string error((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Named: which measurement, and its channel counts on each rank (the rows of each shard).
    EXPECT_THAT(error, HasSubstr("audit: ranks disagree on the effective ranks and similarities of step 0: '0, effective "
                                 "rank' is " + std::to_string(rows_of(0)) + " channels on rank 0 but " +
                                 std::to_string(rows_of(1)) + " channels on rank 1"))
        << r;
  }
}

}  // namespace
}  // namespace gradscope::torch

int main(int argc, char** argv) { return gradscope::test::rank_test_main(argc, argv, gradscope::torch::run_worker); }
