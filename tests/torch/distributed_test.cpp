// Audit across processes (issue 16): 2 and 4 worker processes of this program on loopback
// (FileStore + ProcessGroupGloo) against one process fed the same batches. Each worker writes
// what its audit saw to <dir>/rank<r>.txt; the test reads those files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "../common/ranks.h"
#include "../common/require_data.h"
#include "digits.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/store/saved_report.h"
#include "gradscope/io/render/table.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
constexpr int64_t kRows = 6;   // rows per rank and step
constexpr int kSteps = 4;
// Records a step: node "0" has its pre-activation (Tanh follows) besides the activation,
// output gradient, parameter gradient, parameters and update; node "2" has those five.
constexpr int64_t kPerStep = 11;

// What one audit saw: its records by (step, node, site), flags by node, and where NaN began.
struct Seen {
  std::map<std::string, Stats> records;
  std::map<std::string, std::string> flags;
  std::string origin, error;
  double error_seconds = -1;
};

std::string key(int64_t step, const std::string& node, Site site) {
  return std::to_string(step) + " " + node + " " + site_name(site);
}

void write_seen(const Audit& audit, const std::string& path) {
  std::ofstream out(path);
  char line[512];
  for (const Record& r : audit.records()) {
    const Stats& s = r.stats;
    std::snprintf(line, sizeof line,
                  "R %" PRId64 " %s %d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
                  " %" PRId64 " %a %a %a %a %a %a\n",
                  r.step, r.node.c_str(), static_cast<int>(r.site), s.count, s.finite, s.nan, s.pos_inf,
                  s.neg_inf, s.zero, s.saturated, s.sum, s.sum_sq, s.sum_abs, s.min, s.max, s.max_abs);
    out << line;
  }
  const Report report = audit.report();
  for (const NodeReport& n : report.nodes) out << "F " << n.node << " " << n.flags_label() << "\n";
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (o.found()) out << "O " << o.step << " " << o.node << " " << site_name(o.site) << " " << o.rank << "\n";
}

// Channel views and element histograms of a run, as lines: "C step node a|g channel <stats>"
// and "H step node site num nonfinite min max sum sum_sq bucket:count ...".
struct ViewsSink : RunSink {
  std::ostringstream lines;
  void add_step(const StepRecords& step) override {
    char line[512];
    for (const ChannelRecord& c : step.channels)
      for (const auto& [kind, stats] : {std::make_pair("a", &c.activation), std::make_pair("g", &c.output_grad)})
        for (std::size_t i = 0; i < stats->size(); ++i) {
          const Stats& s = (*stats)[i];
          std::snprintf(line, sizeof line, "C %" PRId64 " %s %s %zu %" PRId64 " %" PRId64 " %" PRId64 " %a %a %a %a %a\n",
                        c.step, c.node.c_str(), kind, i, s.count, s.finite, s.zero, s.sum, s.sum_sq, s.sum_abs,
                        s.min, s.max);
          lines << line;
        }
    for (const ElementHistogram& h : step.histograms) {
      std::snprintf(line, sizeof line, "H %" PRId64 " %s %s %" PRIu64 " %" PRIu64 " %a %a %a %a", h.step,
                    h.node.c_str(), site_name(h.site), h.num, h.nonfinite, h.min, h.max, h.sum, h.sum_squares);
      lines << line;
      for (const auto& [bucket, count] : h.buckets) lines << " " << bucket << ":" << count;
      lines << "\n";
    }
    for (const AttentionRecord& a : step.attention)
      for (std::size_t h = 0; h < a.heads.size(); ++h) {
        const HeadStats& s = a.heads[h];
        std::snprintf(line, sizeof line, "A %" PRId64 " %s %zu %" PRId64 " %" PRId64 " %" PRId64 " %a %a %a\n", a.step,
                      a.node.c_str(), h, s.queries, s.fraction_queries, s.top_queries, s.max_logit, s.entropy_sum,
                      s.entropy_fraction_sum);
        lines << line;
      }
  }
  void set_summary(const RunSummary&) override {}
};

// The view lines of `path` by their key ("C step node a|g channel" / "H step node site"): the
// numbers that follow, as strings and doubles.
std::map<std::string, std::vector<std::string>> read_views(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> words;
    for (std::string w; f >> w;) words.push_back(w);
    const std::size_t key_words = words[0] == "C" ? 5 : 4;  // "C step node a|g channel", "H step node site", "A step node head"
    std::string k;
    for (std::size_t i = 0; i < key_words; ++i) k += (i ? " " : "") + words[i];
    out[k] = std::vector<std::string>(words.begin() + static_cast<std::ptrdiff_t>(key_words), words.end());
  }
  return out;
}

Seen read_seen(const std::string& path) {
  Seen seen;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line.substr(std::min<std::size_t>(2, line.size())));
    if (line[0] == 'R') {
      int64_t step;
      std::string node;
      int site;
      Stats s;
      std::string d[6];
      f >> step >> node >> site >> s.count >> s.finite >> s.nan >> s.pos_inf >> s.neg_inf >> s.zero >> s.saturated;
      for (std::string& x : d) f >> x;
      double* v[6] = {&s.sum, &s.sum_sq, &s.sum_abs, &s.min, &s.max, &s.max_abs};
      for (int i = 0; i < 6; ++i) *v[i] = std::strtod(d[i].c_str(), nullptr);
      seen.records[key(step, node, static_cast<Site>(site))] = s;
    } else if (line[0] == 'F') {
      std::string node, flags;
      f >> node >> flags;
      seen.flags[node] = flags;
    } else if (line[0] == 'O') {
      seen.origin = line.substr(2);
    } else if (line[0] == 'E') {
      seen.error = line.substr(2);
    } else if (line[0] == 'T') {
      f >> seen.error_seconds;
    }
  }
  return seen;
}

::torch::nn::Sequential small_model(bool extra_layer, bool as_float) {
  ::torch::manual_seed(1);  // every rank starts from the same weights
  ::torch::nn::Sequential m(::torch::nn::Linear(6, 8), ::torch::nn::Tanh(), ::torch::nn::Linear(8, 4));
  if (extra_layer) m->push_back(::torch::nn::Linear(4, 4));
  m->to(as_float ? at::kFloat : at::kDouble);
  return m;
}

// Step `step`'s batch of the whole job: the same on every rank, which takes its own rows.
at::Tensor job_batch(int step, int world) {
  ::torch::manual_seed(100 + step);
  return ::torch::randn({world * kRows, 6}, at::kDouble) * 2;
}

void all_reduce_grads(c10d::ProcessGroup& group, ::torch::nn::Module& model, double scale) {
  for (at::Tensor& p : model.parameters()) {
    std::vector<at::Tensor> grads{p.grad()};
    group.allreduce(grads)->wait();
    if (scale != 1) p.grad().mul_(scale);
  }
}

std::string joined(const std::vector<int64_t>& steps) {
  std::string out;
  for (int64_t s : steps) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out.empty() ? "-" : out;
}

// Worker (and, with no group, the one-process reference): kSteps audited steps of the small
// model on this rank's rows. `mode`: "reduce" (gradients summed through the group), "local"
// (not), "nan" (rank 2 feeds a NaN at step 2), "extra"/"float" (rank 1 builds another model),
// "die"/"stall" (rank 1 exits / sleeps before its step 2's merge; no gradient all-reduce, so
// that the audit is the one to find it), "die-report"/"die-dtor" (the same, and rank 0 then
// calls report() / destroys its audit with step 2's merge in flight), "pending" (when on_step
// sees each step; on_step calls report() as it gets step 2, while step 3's merge is in flight;
// no finish(): the destructor ends the last step), "views-rows" (a channel
// view along the rows, and rank 1 has one row fewer). "-sync" at the end: merge_async off.
int run_small(const std::string& mode, int rank, int world, const std::string& dir) {
  const bool single = world == 0;
  const int job = single ? std::stoi(mode.substr(mode.find(':') + 1)) : world;
  ProcessGroupPtr group;
  if (!single)
    group = test::make_group(dir, rank, world, std::chrono::milliseconds(mode == "stall" ? 1500 : 10000));
  auto model = small_model(mode == "extra" && rank == 1, mode == "float" && rank == 1);
  ::torch::optim::SGD sgd(model->parameters(), 0.05);
  std::unique_ptr<RunWriter> run;
  if (rank == 0 && !single) {
    RunWriterOptions o;
    o.world_size = world;
    o.backend = job_info(group).backend;
    run = std::make_unique<RunWriter>(dir + "/run", o);
  }
  const bool sync = mode.size() > 5 && mode.compare(mode.size() - 5, 5, "-sync") == 0;
  const bool dies = mode.rfind("die", 0) == 0 || mode == "stall";
  std::vector<int64_t> handed;  // the steps on_step got, in order
  AuditOptions options;
  options.process_group = group;
  options.sink = run.get();
  options.merge_async = !sync;
  // The ranks sum their gradients (all_reduce_grads with scale 1) of a summed loss: every
  // rank's output gradients are the one process's as measured.
  options.ranks_average_gradients = false;
  std::optional<Audit>* self = nullptr;
  options.on_step = [&](const std::vector<Record>& r) {
    handed.push_back(r.empty() ? -1 : r.front().step);
    // "pending": report() from on_step waits for no step whose step() has not returned
    if (mode.rfind("pending", 0) == 0 && handed.back() == 2) (*self)->report();
  };
  // "views": a channel view on every node and element histograms at every audited step.
  const bool rows = mode.rfind("views-rows", 0) == 0;
  const bool views = mode.rfind("views", 0) == 0 && !rows;
  ViewsSink views_sink;
  if (views) {
    options.channels_all_nodes = ChannelView{1, 1, {}};
    options.histogram_every = mode == "views-uneven" && rank == 1 ? 2 : 1;
    options.attention_every = 1;
    options.sink = &views_sink;  // rank 0's (the one process's) only: the others ignore theirs
  }
  if (rows) options.channels_all_nodes = ChannelView{0, 1, {}};  // a channel a row
  std::ofstream err(dir + "/rank" + std::to_string(rank) + ".err");
  std::ofstream seen(dir + "/handed" + std::to_string(rank) + ".txt");
  const auto failed = [&](const Error& e, std::chrono::steady_clock::time_point start) {
    err << "E " << e.what() << "\nT " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
        << "\n";
    if (run) run->close();  // what is committed stays readable
    return 3;
  };
  try {
    std::optional<Audit> audit(std::in_place, model, options);
    self = &audit;
    for (int step = 0; step < kSteps; ++step) {
      at::Tensor x = job_batch(step, job).to(model->parameters()[0].scalar_type());
      if (!single) x = x.narrow(0, rank * kRows, rows && rank == 1 ? kRows - 1 : kRows).clone();
      if (mode == "nan" && rank == 2 && step == 2) x[1][3] = NAN;
      sgd.zero_grad();
      at::Tensor y = audit->forward(model, x);
      if (views) {
        // Attention of node "0" from this rank's rows: two heads, three queries and keys, the
        // outer products of a row's halves, causal; merged, it is the one process's.
        const at::Tensor q = x.view({-1, 2, 3, 1}), k = x.view({-1, 2, 1, 3});
        audit->record_attention("0", q * k, ::torch::ones({3, 3}, at::kBool).tril());
      }
      (y * y).sum().mul(0.5).backward();
      if (mode != "local" && !dies && !single) all_reduce_grads(*group, *model, 1);
      if (rank == 1 && step == 2 && dies) {
        audit->flush();  // step 1 merged whole everywhere: the failure is step 2's
        if (mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(60));
        _exit(7);
      }
      auto start = std::chrono::steady_clock::now();
      try {
        audit->step(sgd);
      } catch (const Error& e) {
        return failed(e, start);
      }
      seen << "S " << step << " " << joined(handed) << "\n";  // on_step's steps after step()
      if (mode.rfind("pending", 0) == 0 && step == 1) {
        // report() and records() in the middle of the run include step 1, merged.
        const Report report = audit->report();
        int64_t rows = -1;
        for (const Record& r : audit->records())
          if (r.step == 1 && r.node == "0" && r.site == Site::kActivation) rows = r.stats.count / 8;
        seen << "R " << joined(handed) << " " << rows << " " << report.nodes.size() << "\n";
      }
      if (rank == 0 && step == 2 && mode == "die-report") {
        start = std::chrono::steady_clock::now();
        try {
          audit->report();
        } catch (const Error& e) {
          return failed(e, start);
        }
        err << "E none\n";
        return 4;
      }
      if (rank == 0 && step == 2 && mode == "die-dtor") {
        start = std::chrono::steady_clock::now();
        std::fflush(stderr);
        if (!std::freopen((dir + "/rank0.log").c_str(), "w", stderr)) return 5;
        audit.reset();  // must neither throw nor hang
        std::fflush(stderr);
        err << "T " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << "\n";
        seen << "D " << joined(handed) << "\n";
        if (run) run->close();
        return 0;
      }
    }
    if (mode.rfind("pending", 0) == 0) {
      audit.reset();  // no finish(): the destructor hands the last step over
      seen << "D " << joined(handed) << "\n";
      if (run) run->close();
      return 0;
    }
    audit->finish();
    write_seen(*audit, dir + "/rank" + std::to_string(rank) + ".txt");
    if (views) std::ofstream(dir + "/views" + std::to_string(rank) + ".txt") << views_sink.lines.str();
  } catch (const Error& e) {
    err << "E " << e.what() << "\n";
    return 3;
  }
  if (run) run->close();
  return 0;
}

// The data-parallel MLP on the digits: each rank a quarter (or half) of a 64-row batch, the
// mean loss of its rows, gradients averaged through the group; world 0: the whole batch.
int run_digits(int rank, int world, const std::string& dir, const std::string& data) {
  const cli::Digits d = cli::load_digits(data, 0.2, 7);
  ProcessGroupPtr group;
  if (world > 0) group = test::make_group(dir, rank, world, std::chrono::milliseconds(10000));
  ::torch::manual_seed(3);
  ::torch::nn::Sequential model(::torch::nn::Linear(64, 32), ::torch::nn::ReLU(), ::torch::nn::Linear(32, 32),
                                ::torch::nn::ReLU(), ::torch::nn::Linear(32, 10));
  ::torch::optim::SGD sgd(model->parameters(), 0.1);
  AuditOptions options;
  options.process_group = group;
  Audit audit(model, options);
  constexpr int64_t kBatch = 64;
  const int64_t share = world > 0 ? kBatch / world : kBatch;
  for (int step = 0; step < 40; ++step) {
    const int64_t begin = (step * kBatch) % (d.x_train.size(0) - kBatch) + (world > 0 ? rank * share : 0);
    sgd.zero_grad();
    at::Tensor y = audit.forward(model, d.x_train.narrow(0, begin, share));
    ::torch::nn::functional::cross_entropy(y, d.y_train.narrow(0, begin, share)).backward();
    if (world > 0) all_reduce_grads(*group, *model, 1.0 / world);
    audit.step(sgd);
  }
  write_seen(audit, dir + "/rank" + std::to_string(world > 0 ? rank : 0) + ".txt");
  return 0;
}

std::string data_dir() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return env ? env : GRADSCOPE_DEFAULT_DATA_DIR;
}

// Runs `scenario` on `world` workers; their exit codes.
std::vector<int> run_job(const std::string& scenario, int world, const std::string& dir,
                         const std::vector<std::string>& extra = {}) {
  return test::wait_workers(test::start_workers(scenario, world, dir, extra), 120);
}

// The reference: one process, fed the batches of all `world` ranks at once.
Seen one_process(int world) {
  const test::TempDir scratch("gs-dist-ref");
  const std::string& dir = scratch.path;
  EXPECT_EQ(run_small("single:" + std::to_string(world), 0, 0, dir), 0);
  return read_seen(dir + "/rank0.txt");
}

void expect_close(double a, double b, double rel, const std::string& what) {
  if (a == b) return;  // also +-Inf
  EXPECT_LE(std::abs(a - b), rel * std::max(std::abs(a), std::abs(b))) << what << ": " << a << " vs " << b;
}

// The job of `mode` ("reduce", "reduce-sync") at `world` ranks against one process.
void expect_merged_equal_one_process(const std::string& mode, int world) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  EXPECT_THAT(run_job(mode, world, dir), ::testing::Each(0));
  const Seen ref = one_process(world);
  ASSERT_EQ(ref.records.size(), static_cast<std::size_t>(kSteps * kPerStep));
  for (int r = 0; r < world; ++r) {
    const Seen got = read_seen(dir + "/rank" + std::to_string(r) + ".txt");
    ASSERT_EQ(got.records.size(), ref.records.size()) << "rank " << r;
    for (const auto& [k, want] : ref.records) {
      ASSERT_TRUE(got.records.count(k)) << k;
      const Stats& s = got.records.at(k);
      EXPECT_EQ(s.count, want.count) << k;  // parameter sites counted once, not `world` times
      EXPECT_EQ(s.finite, want.finite) << k;
      EXPECT_EQ(s.zero, want.zero) << k;
      EXPECT_EQ(s.saturated, want.saturated) << k;
      EXPECT_EQ(s.nan + s.pos_inf + s.neg_inf, 0) << k;
      // At step 0 (the same weights everywhere) activations and output gradients are the same
      // numbers in both, row by row: min and max exact. The ranks' summed gradients differ from
      // the one process's in rounding, and so, from step 1 on, does everything they change.
      const bool exact = k.rfind("0 ", 0) == 0 && (k.find("activation") != std::string::npos ||
                                                   k.find("output_grad") != std::string::npos);
      const double rel = exact ? 0 : 1e-12;
      expect_close(s.min, want.min, rel, k + " min");
      expect_close(s.max, want.max, rel, k + " max");
      expect_close(s.max_abs, want.max_abs, rel, k + " max_abs");
      expect_close(s.sum, want.sum, 1e-12, k + " sum");
      expect_close(s.sum_sq, want.sum_sq, 1e-12, k + " sum_sq");
      expect_close(s.sum_abs, want.sum_abs, 1e-12, k + " sum_abs");
    }
    EXPECT_EQ(got.flags, ref.flags) << "rank " << r;
    EXPECT_TRUE(got.origin.empty());
  }
  // Rank 0 wrote the run, with the job in its metadata; the run's report is rank 0's.
  RunReader reader(dir + "/run");
  EXPECT_EQ(reader.metadata().world_size, world);
  EXPECT_EQ(reader.metadata().backend, "gloo");
  EXPECT_EQ(reader.step_count(), kSteps);
  int64_t records = 0;
  reader.for_each([&](const Record&) { ++records; });
  EXPECT_EQ(records, kSteps * kPerStep);
  int runs = 0;  // only rank 0 writes a run (beside each rank's .txt and .err)
  for (const auto& entry : fs::directory_iterator(dir)) runs += entry.is_directory();
  EXPECT_EQ(runs, 1);
}

class MergedRanks : public ::testing::TestWithParam<int> {};

// merge_async: each step's merge waited on at the next step.
TEST_P(MergedRanks, EqualOneProcessFedTheConcatenatedBatches) { expect_merged_equal_one_process("reduce", GetParam()); }

INSTANTIATE_TEST_SUITE_P(Distributed, MergedRanks, ::testing::Values(2, 4));

// merge_async off (the default): at each step's end.
// torch.distributed's NCCL group has no backend for CPU tensors: the merge's buffers go to the
// device the group serves (the current CUDA device), and come back to the CPU to be read. The
// choice, on groups of one rank whose backends are registered as each kind of job has them.
TEST(Distributed, TheMergeTravelsOnADeviceTheGroupHasABackendFor) {
  const test::TempDir dir("gradscope-collective-device");
  auto store = c10::make_intrusive<c10d::FileStore>(dir.path + "/store", 1);
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(30));
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, 0, 1, options);
  const auto group_with = [&](std::vector<c10::DeviceType> devices) {
    auto g = c10::make_intrusive<c10d::ProcessGroup>(store, 0, 1);
    g->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
    for (c10::DeviceType d : devices) g->setBackend(d, c10d::ProcessGroup::BackendType::GLOO, gloo);
    return g;
  };
  EXPECT_EQ(collective_device(group_with({c10::DeviceType::CPU})), c10::Device(at::kCPU));  // "gloo"
  EXPECT_EQ(collective_device(group_with({c10::DeviceType::CUDA})), c10::Device(at::kCUDA));  // "nccl"
  EXPECT_EQ(collective_device(group_with({c10::DeviceType::CUDA, c10::DeviceType::CPU})),
            c10::Device(at::kCPU));  // "cpu:gloo,cuda:nccl"
  EXPECT_EQ(collective_device(c10::make_intrusive<c10d::ProcessGroup>(0, 1)), c10::Device(at::kCPU));
  // A group that serves CPU tensors merges a step as before: one rank's own statistics back.
  const std::vector<at::Tensor> back = allgather_buffer(group_with({c10::DeviceType::CPU}),
                                                        at::arange(5, at::kLong), "test", "a gather");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].device().is_cpu());
  EXPECT_TRUE(at::equal(back[0], at::arange(5, at::kLong)));
}

TEST(Distributed, MergedAtEachStepsEndEqualOneProcessToo) { expect_merged_equal_one_process("reduce-sync", 2); }

// The "S"/"R"/"D" lines of a worker's handed<r>.txt, in order.
std::vector<std::string> handed_lines(const std::string& dir, int rank) {
  std::vector<std::string> out;
  std::ifstream in(dir + "/handed" + std::to_string(rank) + ".txt");
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Distributed, AsyncMergeHandsEachStepOverAtTheNextAndReportWaitsForIt) {
  for (const int world : {2, 4}) {
    const test::TempDir scratch("gs-dist");
    const std::string& dir = scratch.path;
    EXPECT_THAT(run_job("pending", world, dir), ::testing::Each(0));
    for (int r = 0; r < world; ++r)
      // After step N's step(), on_step has seen the steps before N; report() in the middle of
      // step 2 waited for step 1's merge: on_step got it, and records() hold the job's rows
      // (every rank's kRows); the destructor hands the last step over.
      EXPECT_THAT(handed_lines(dir, r),
                  ::testing::ElementsAre("S 0 -", "S 1 0", "R 0,1 " + std::to_string(world * kRows) + " 2", "S 2 0,1",
                                         "S 3 0,1,2", "D 0,1,2,3"))
          << world << " ranks, rank " << r;
    RunReader reader(dir + "/run");  // every step, the last one from the destructor
    EXPECT_EQ(reader.step_count(), kSteps);
    int64_t records = 0;
    reader.for_each([&](const Record&) { ++records; });
    EXPECT_EQ(records, kSteps * kPerStep);
  }
}

TEST(Distributed, SyncMergeHandsEachStepOverAtItsOwnStep) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  EXPECT_THAT(run_job("pending-sync", 2, dir), ::testing::Each(0));
  for (int r = 0; r < 2; ++r)
    EXPECT_THAT(handed_lines(dir, r), ::testing::ElementsAre("S 0 0", "S 1 0,1", "R 0,1 " + std::to_string(2 * kRows) + " 2",
                                                             "S 2 0,1,2", "S 3 0,1,2,3", "D 0,1,2,3"));
}

// Gloo cannot allgather buffers of different sizes (it aborts the receiving process): a
// viewed node whose channel count differs across ranks must be an Error on every rank,
// naming it, at the step where it happens.
TEST(Distributed, ChannelCountsThatDifferAcrossRanksFailNamingThemNotAbort) {
  for (const char* mode : {"views-rows", "views-rows-sync"}) {
    const test::TempDir scratch("gs-dist");
    const std::string& dir = scratch.path;
    EXPECT_THAT(run_job(mode, 2, dir), ::testing::Each(3)) << mode;
    for (int r = 0; r < 2; ++r)
      // The effective ranks' check comes first at this step (src/torch/audit/spectra.cpp) and names
      // the difference; the views' own check (src/torch/distributed/rank_merge.cpp) stays behind it
      // for what no effective rank measures (a histogram site tapped on one rank only).
      EXPECT_THAT(read_seen(dir + "/rank" + std::to_string(r) + ".err").error,
                  HasSubstr("audit: ranks disagree on the effective ranks and similarities of step 0: '0, effective "
                            "rank' is 6 channels on rank 0 but 5 channels on rank 1"))
          << mode << " rank " << r;
  }
}

class MergedViews : public ::testing::TestWithParam<int> {};

TEST_P(MergedViews, ChannelViewsAndHistogramsEqualOneProcessFedTheConcatenatedBatches) {
  const int world = GetParam();
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  EXPECT_THAT(run_job("views", world, dir), ::testing::Each(0));
  const test::TempDir ref_scratch("gs-dist-ref");
  ASSERT_EQ(run_small("views-single:" + std::to_string(world), 0, 0, ref_scratch.path), 0);
  const auto ref = read_views(ref_scratch.path + "/views0.txt");
  const auto got = read_views(dir + "/views0.txt");
  EXPECT_EQ(got.size(), ref.size());
  // At step 0 (the same weights everywhere) as in MergedRanks: node "0" has 8 channels, "2" 4,
  // each with activation and output gradient; histograms of three sites on two nodes.
  int channels = 0, histograms = 0;
  for (const auto& [k, want] : ref) {
    if (k.rfind("C 0 ", 0) != 0 && k.rfind("H 0 ", 0) != 0) continue;
    ASSERT_TRUE(got.count(k)) << k;
    const std::vector<std::string>& v = got.at(k);
    ASSERT_EQ(v.size(), want.size()) << k;
    if (k[0] == 'C') {
      ++channels;
      for (int i : {0, 1, 2, 6, 7}) EXPECT_EQ(v[i], want[i]) << k << " field " << i;  // counts, min, max
      for (int i : {3, 4, 5}) expect_close(std::strtod(v[i].c_str(), nullptr), std::strtod(want[i].c_str(), nullptr), 1e-12, k);
      EXPECT_EQ(std::stoll(v[0]), kRows * world) << k;  // every rank's rows
    } else {
      ++histograms;
      EXPECT_EQ(v[0], want[0]) << k << " num";
      EXPECT_EQ(v[1], "0") << k;
      for (std::size_t i = 6; i < want.size(); ++i) EXPECT_EQ(v[i], want[i]) << k << " bucket";  // exact
      // The ranks' summed gradients differ from the one process's in rounding (MergedRanks):
      // their min and max to 1e-12; activations and output gradients exactly.
      const bool exact = k.find("param_grad") == std::string::npos;
      for (int i : {2, 3}) {
        if (exact) {
          EXPECT_EQ(v[i], want[i]) << k << " min/max";
        }
      }
      for (int i : {2, 3, 4, 5}) expect_close(std::strtod(v[i].c_str(), nullptr), std::strtod(want[i].c_str(), nullptr), 1e-12, k);
      uint64_t buckets = 0;
      for (std::size_t i = 6; i < v.size(); ++i) buckets += std::stoull(v[i].substr(v[i].find(':') + 1));
      EXPECT_EQ(buckets, std::stoull(v[0])) << k;
    }
  }
  EXPECT_EQ(channels, 2 * (8 + 4));
  EXPECT_EQ(histograms, 2 * 3);
  // Attention: every rank's queries counted, the largest logit the job's, the sums the one
  // process's up to rounding (a sum over rows in another order).
  int heads = 0;
  for (const auto& [k, want] : ref) {
    if (k[0] != 'A') continue;
    ++heads;
    ASSERT_TRUE(got.count(k)) << k;
    const std::vector<std::string>& v = got.at(k);
    for (int i : {0, 1, 2, 3}) EXPECT_EQ(v[i], want[i]) << k << " field " << i;  // counts and the largest logit
    for (int i : {4, 5}) expect_close(std::strtod(v[i].c_str(), nullptr), std::strtod(want[i].c_str(), nullptr), 1e-12, k);
    EXPECT_EQ(std::stoll(v[0]), kRows * world * 3) << k;  // three queries a row
  }
  EXPECT_EQ(heads, kSteps * 2);
  // num is every element of the job's tensor; the averaged gradient counts once, not `world` times.
  EXPECT_EQ(std::stoull(got.at("H 0 0 activation")[0]), static_cast<uint64_t>(world * kRows * 8));
  EXPECT_EQ(std::stoull(got.at("H 0 2 output_grad")[0]), static_cast<uint64_t>(world * kRows * 4));
  EXPECT_EQ(std::stoull(got.at("H 0 0 param_grad")[0]), static_cast<uint64_t>(8 * 6 + 8));
}

INSTANTIATE_TEST_SUITE_P(Distributed, MergedViews, ::testing::Values(2, 4));

TEST(Distributed, GradientsThatDifferAcrossRanksAreMergedNotDeduplicated) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  EXPECT_THAT(run_job("local", 2, dir), ::testing::Each(0));
  const Seen got = read_seen(dir + "/rank0.txt");
  // Without the all-reduce each rank's first-step gradient is its own: both count.
  EXPECT_EQ(got.records.at(key(0, "0", Site::kParamGrad)).count, 2 * (8 * 6 + 8));
  // The parameters were equal before the first update (same seed): counted once.
  EXPECT_EQ(got.records.at(key(0, "0", Site::kParam)).count, 8 * 6 + 8);
}

TEST(Distributed, NanOnRankTwoIsReportedWithItsRankAndNode) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  EXPECT_THAT(run_job("nan", 4, dir), ::testing::Each(0));
  for (int r = 0; r < 4; ++r) {
    const std::string origin = read_seen(dir + "/rank" + std::to_string(r) + ".txt").origin;
    EXPECT_THAT(origin, ::testing::MatchesRegex("2 0 [a-z_]*activation 2")) << "rank " << r;  // step node site rank
  }
  // The saved run keeps the rank (a node value row, readable by older builds).
  RunReader reader(dir + "/run");
  SavedReportBuilder builder(reader.summary());
  reader.for_each(builder.visitor());
  const Report saved = builder.build();
  EXPECT_EQ(saved.nonfinite_origin.step, 2);
  EXPECT_EQ(saved.nonfinite_origin.node, "0");
  EXPECT_EQ(saved.nonfinite_origin.rank, 2);
  EXPECT_THAT(render_table(saved), HasSubstr(", rank 2)\n"));
  EXPECT_THAT(render_json(saved, -1), HasSubstr("\"rank\":2"));
  // Runs without ranks render as before.
  Report one = saved;
  one.nonfinite_origin.rank = -1;
  EXPECT_THAT(render_table(one), ::testing::Not(HasSubstr(", rank ")));
  EXPECT_THAT(render_json(one, -1), ::testing::Not(HasSubstr("\"rank\"")));
}

TEST(Distributed, RanksWithOtherNodesFailNamingTheDifference) {
  for (const auto& [mode, want] : std::vector<std::pair<std::string, std::string>>{
           {"extra", "ranks disagree on the nodes: rank 1 has '3' (Double[4, 4], Double[4]) that rank 0 lacks"},
           {"float", "'0' is Double[8, 6], Double[8] on rank 0 but Float[8, 6], Float[8] on rank 1"},
           // The options that size a step's buffer: checked before the first step, not found by a
           // collective of mismatched sizes.
           {"views-uneven", "'0' is Double[8, 6], Double[8], channel view dim 1 every 1, histograms every 1 of every 1 steps on rank 0 but "
                            "Double[8, 6], Double[8], channel view dim 1 every 1, histograms every 2 of every 1 steps on rank 1"}}) {
    const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
    EXPECT_THAT(run_job(mode, 2, dir), ::testing::Each(3)) << mode;
    for (int r = 0; r < 2; ++r)
      EXPECT_THAT(read_seen(dir + "/rank" + std::to_string(r) + ".err").error, HasSubstr(want)) << mode;
  }
}

// The run of `dir` holds the two whole steps before the failed step 2.
void expect_two_whole_steps(const std::string& dir) {
  RunReader reader(dir + "/run");
  EXPECT_EQ(reader.step_count(), 2);
  int64_t records = 0;
  reader.for_each([&](const Record& r) { records += r.step < 2; });
  EXPECT_EQ(records, 2 * kPerStep);
}

// Rank 1 dies before its step 2's merge: with merge_async rank 0 finds it at step 3's step()
// (where it waits for step 2's), at once: the error still names step 2.
TEST(Distributed, KilledRankFailsTheOthersAndTheRunStaysReadable) {
  for (const char* mode : {"die", "die-sync"}) {
    const test::TempDir scratch("gs-dist");
    const std::string& dir = scratch.path;
    const std::vector<int> codes = run_job(mode, 2, dir);
    EXPECT_EQ(codes[0], 3) << mode;
    EXPECT_EQ(codes[1], 7) << mode;
    const Seen rank0 = read_seen(dir + "/rank0.err");
    EXPECT_THAT(rank0.error, HasSubstr("audit: rank 0 of 2 (gloo): the merge of step 2 failed; a rank died")) << mode;
    EXPECT_GE(rank0.error_seconds, 0);
    EXPECT_LT(rank0.error_seconds, 10.0) << mode;  // the group's timeout
    // on_step had the steps before; "S 2" (the step whose merge is in flight) only when async
    const std::vector<std::string> want = std::string(mode) == "die" ? std::vector<std::string>{"S 0 -", "S 1 0", "S 2 0,1"}
                                                                      : std::vector<std::string>{"S 0 0", "S 1 0,1"};
    EXPECT_EQ(handed_lines(dir, 0), want) << mode;
    expect_two_whole_steps(dir);
  }
}

TEST(Distributed, KilledRankWithAMergeInFlightFailsReportNamingTheStep) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  const std::vector<int> codes = run_job("die-report", 2, dir);
  EXPECT_EQ(codes[0], 3);
  EXPECT_EQ(codes[1], 7);
  const Seen rank0 = read_seen(dir + "/rank0.err");
  EXPECT_THAT(rank0.error, HasSubstr("audit: rank 0 of 2 (gloo): the merge of step 2 failed; a rank died"));
  EXPECT_LT(rank0.error_seconds, 10.0);
  expect_two_whole_steps(dir);
}

TEST(Distributed, DestructorWithAMergeInFlightOnADeadRankNeitherThrowsNorHangs) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  const std::vector<int> codes = run_job("die-dtor", 2, dir);
  EXPECT_EQ(codes[0], 0);  // no exception escaped ~Audit
  EXPECT_EQ(codes[1], 7);
  const Seen rank0 = read_seen(dir + "/rank0.err");
  EXPECT_GE(rank0.error_seconds, 0);
  EXPECT_LT(rank0.error_seconds, 10.0);  // at most the group's timeout
  std::ifstream log(dir + "/rank0.log");
  const std::string logged((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(logged, HasSubstr("gradscope: error: audit: rank 0 of 2 (gloo): the merge of step 2 failed"));
  EXPECT_THAT(logged, HasSubstr("in ~Audit"));
  EXPECT_THAT(handed_lines(dir, 0), ::testing::ElementsAre("S 0 -", "S 1 0", "S 2 0,1", "D 0,1"));  // step 2 lost
  expect_two_whole_steps(dir);
}

TEST(Distributed, StalledRankFailsTheOthersWithinTheTimeout) {
  const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
  const auto pids = test::start_workers("stall", 2, dir);
  const std::vector<int> first = test::wait_workers({pids[0]}, 30);
  test::wait_workers({pids[1]}, 0);  // still asleep: killed
  EXPECT_EQ(first[0], 3);
  const Seen rank0 = read_seen(dir + "/rank0.err");
  EXPECT_THAT(rank0.error, HasSubstr("the merge of step 2 failed"));
  EXPECT_GT(rank0.error_seconds, 1.0);  // waited for the 1.5 s timeout ...
  EXPECT_LT(rank0.error_seconds, 6.0);  // ... and not for the sleeper
}

TEST(Distributed, DataParallelDigitsGiveTheOneProcessReport) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const test::TempDir ref_scratch("gs-dist-ref");
  const std::string& ref_dir = ref_scratch.path;
  ASSERT_EQ(run_digits(0, 0, ref_dir, data_dir() + "/digits.csv"), 0);
  const Seen ref = read_seen(ref_dir + "/rank0.txt");
  ASSERT_EQ(ref.flags.size(), 3u);
  for (int world : {2, 4}) {
    const test::TempDir scratch("gs-dist");
  const std::string& dir = scratch.path;
    EXPECT_THAT(run_job("digits", world, dir, {data_dir() + "/digits.csv"}), ::testing::Each(0));
    const Seen got = read_seen(dir + "/rank0.txt");
    EXPECT_EQ(got.flags, ref.flags) << world << " ranks";
    // The averaged gradients are the whole batch's up to float32 rounding, and so are the
    // output gradients: each rank's mean loss gives world times the whole batch's, divided
    // back (AuditOptions::ranks_average_gradients).
    for (int step : {0, 39}) {
      for (const auto& [node, site] : {std::pair{"4", Site::kParamGrad}, std::pair{"0", Site::kOutputGrad},
                                       std::pair{"4", Site::kOutputGrad}}) {
        const std::string k = key(step, node, site);
        EXPECT_EQ(got.records.at(k).count, ref.records.at(k).count);
        expect_close(got.records.at(k).l2(), ref.records.at(k).l2(), 1e-3, k);
      }
    }
  }
}

}  // namespace
}  // namespace gradscope::torch

int main(int argc, char** argv) {
  if (argc >= 6 && std::string(argv[1]) == gradscope::test::kRankWorker) {
    const std::string scenario = argv[2];
    const int rank = std::stoi(argv[3]), world = std::stoi(argv[4]);
    if (scenario == "digits") return gradscope::torch::run_digits(rank, world, argv[5], argv[6]);
    return gradscope::torch::run_small(scenario, rank, world, argv[5]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
