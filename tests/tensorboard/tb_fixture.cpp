// Writes the saved runs the TensorBoard tests read (tests/tensorboard/test_tensorboard.py),
// through the same RunWriter an audit uses, and with --live the TensorBoard file a
// TensorBoardSink wrote beside it while the run was "trained" (a TeeSink feeds both).
//
//   tb_fixture basic|nan|names|long RUN_DIR [--live TB_DIR] [--steps N]
//   tb_fixture channels RUN_DIR      one JSON line per channel record, as RunReader reads it
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gradscope/core/stats/stats.h"
#include "gradscope/core/audit/tee_sink.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/trees/store.h"
#include "../core/tree_builders.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/tensorboard/tensorboard_sink.h"

namespace {

using namespace gradscope;

Stats stats_of(const std::vector<float>& v) {
  return compute(
      TensorView::contiguous(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())}));
}

std::vector<float> normal(std::mt19937& rng, int n, double scale, double shift = 0) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(shift + scale * d(rng));
  return v;
}

// One step of a small model with planted trouble: fc2 dies at step 20 and its gradient
// vanishes, its updates are tiny throughout (STAGNANT from step 9), relu has no parameters.
StepRecords basic_step(std::mt19937& rng, int64_t step, const std::vector<std::string>& names) {
  StepRecords s;
  s.step = step;
  const std::string& fc1 = names[0];
  const std::string& fc2 = names[1];
  const std::string& relu = names[2];
  const auto add = [&](const std::string& node, Site site, const std::vector<float>& v) {
    s.records.push_back({step, node, site, stats_of(v)});
  };
  add(fc1, Site::kPreActivation, normal(rng, 256, 40.0));
  add(fc1, Site::kActivation, normal(rng, 256, 1.0));
  add(fc1, Site::kParamGrad, normal(rng, 512, 0.01 / (1 + step)));
  add(fc1, Site::kParam, normal(rng, 512, 0.1));
  add(fc1, Site::kUpdate, normal(rng, 512, 1e-3));
  std::vector<float> act = normal(rng, 128, 1.0);
  if (step >= 20)
    for (std::size_t i = 0; i < act.size(); ++i)
      if (i % 50 != 0) act[i] = 0.f;
  add(fc2, Site::kActivation, act);
  add(fc2, Site::kParamGrad, normal(rng, 64, step >= 20 ? 1e-10 : 1e-3));
  add(fc2, Site::kParam, normal(rng, 64, 1.0));
  add(fc2, Site::kUpdate, normal(rng, 64, 1e-9));
  add(relu, Site::kActivation, normal(rng, 128, 60.0));
  add(relu, Site::kOutputGrad, normal(rng, 128, 0.5));
  // A module called twice in one step: two records that merge.
  add(relu, Site::kOutputGrad, normal(rng, 128, 0.5));
  if (step % 10 == 0) {
    ChannelRecord c;
    c.step = step;
    c.node = fc1;
    for (int ch = 0; ch < 8; ++ch) {
      c.activation.push_back(stats_of(normal(rng, 32, 1.0, ch - 4.0)));
      c.output_grad.push_back(stats_of(normal(rng, 32, 1e-3 * (ch + 1))));
    }
    c.effective_rank = 3.5 + 0.01 * static_cast<double>(step);
    s.channels.push_back(c);
  }
  return s;
}

StepRecords nan_step(int64_t step) {
  StepRecords s;
  s.step = step;
  const std::vector<float> nans(64, std::numeric_limits<float>::quiet_NaN());
  for (const char* node : {"fc1", "fc2"})
    for (Site site :
         {Site::kActivation, Site::kParamGrad, Site::kParam, Site::kUpdate, Site::kOutputGrad})
      s.records.push_back({step, node, site, stats_of(nans)});
  ChannelRecord c;
  c.step = step;
  c.node = "fc1";
  c.activation.assign(4, stats_of(nans));
  c.output_grad.assign(4, stats_of(nans));
  s.channels.push_back(c);
  return s;
}

// A long run kept small per step: one node, four sites.
StepRecords long_step(int64_t step) {
  StepRecords s;
  s.step = step;
  std::vector<float> v(16);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((step % 97) + i) * 1e-3f;
  for (Site site : {Site::kActivation, Site::kParamGrad, Site::kParam, Site::kUpdate})
    s.records.push_back({step, "fc", site, stats_of(v)});
  return s;
}

void save_embedding(const std::string& dir) {
  EmbeddingRunSummary e;
  EmbeddingTableSummary t;
  t.report.layer = "item";
  t.report.stats.num_embeddings = 1000;
  t.report.stats.exposed_rows = 900;
  t.report.stats.active_coverage_pct = 90.0;
  t.report.stats.never_exposed_rows = 100;
  t.report.stats.never_updated_rows = 20;
  t.report.stats.zombie_rows = 250;
  t.report.stats.zombie_rows_judged = 800;
  t.report.stats.lookup_gini = 0.4;
  t.report.stats.popularity_gini = 0.35;
  t.profile.layer = "item";
  t.profile.num_embeddings = 1000;
  t.profile.exposed_rows = 900;
  t.profile.exposure = {{1, 2, 4, 8}, {500, 300, 100}, 0, 0};  // steps each exposed row was in a batch
  t.profile.velocity = {{1e-4, 1e-3, 1e-2}, {600, 280}, 20, 0};
  e.tables.push_back(t);
  save_embedding_summary(dir, e);
}

// Measured compression points, two of one method (their budget then names them apart).
void save_compression(const std::string& dir) {
  compress::MeasuredComparison c;
  c.model = "fixture";
  c.fp32_accuracy = 0.95;
  c.fp32_bytes = 1000;
  c.points = {{"dynamics", "quarter", 250, 0.93}, {"uniform-int8", "int8", 300, 0.94},
              {"uniform-int4", "int4", 170, std::nan("")}, {"dynamics", "half", 500, 0.95}};
  save_measured_comparison(dir, c);
}

int dump_channels(const std::string& run) {
  RunReader reader(run);
  RunVisitor v;
  v.record = [](const Record&) {};
  v.channel = [](const ChannelRecord& c) {
    const auto list = [](const std::vector<Stats>& all) {
      std::string out = "[";
      for (const Stats& s : all) {
        if (out.size() > 1) out += ",";
        char buf[256];
        std::snprintf(buf, sizeof buf, "[%lld,%lld,%lld,%.17g,%.17g]",
                      static_cast<long long>(s.finite), static_cast<long long>(s.nan),
                      static_cast<long long>(s.pos_inf + s.neg_inf), s.sum, s.sum_sq);
        out += buf;
      }
      return out + "]";
    };
    char rank[64];
    std::snprintf(rank, sizeof rank, "%.17g", c.effective_rank);
    std::cout << "{\"step\":" << c.step << ",\"activation\":" << list(c.activation)
              << ",\"output_grad\":" << list(c.output_grad) << ",\"effective_rank\":"
              << (std::isnan(c.effective_rank) ? std::string("null") : std::string(rank)) << "}\n";
  };
  reader.for_each(v);
  return 0;
}

}  // namespace

// A tree run of 12 rounds of a two-class model with reference and validation rows (so every
// round measure is there), as `gradscope trees` writes one.
int write_trees(const std::string& dir) {
  std::mt19937_64 gen(5);
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 12; ++r)
    for (int32_t c = 0; c < 2; ++c) trees.push_back(test::random_tree(gen, r, c, 3, 2));
  const TreeEnsemble m = test::ensemble(trees, 3, 2, TreeLink::kSoftmax, "multi:softprob");
  const TreeData train = test::random_data(gen, 60, 3, [](const double* x) { return x[0] > 0 ? 1.0 : 0.0; });
  const TreeData valid = test::random_data(gen, 30, 3, [](const double* x) { return x[1] > 0 ? 1.0 : 0.0; });
  RunWriterOptions opt;
  opt.overwrite = true;
  write_tree_run(dir, {"model.json", "train.csv", "valid.csv", "y", analyze_tree_dynamics(m, {&train, &valid}, {})},
                 opt);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr
        << "usage: tb_fixture basic|nan|names|long|channels|trees RUN_DIR [--live TB_DIR] [--steps N]\n";
    return 2;
  }
  const std::string kind = argv[1], dir = argv[2];
  if (kind == "channels") return dump_channels(dir);
  if (kind == "trees") return write_trees(dir);
  std::string live;
  int64_t steps = kind == "long" ? 100000 : 60;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--live") live = argv[i + 1];
    if (std::string(argv[i]) == "--steps") steps = std::atoll(argv[i + 1]);
  }
  RunWriterOptions opt;
  opt.overwrite = true;
  RunWriter run(dir, opt);
  std::unique_ptr<tensorboard::TensorBoardSink> tb;
  std::vector<RunSink*> sinks{&run};
  if (!live.empty()) {
    tb = std::make_unique<tensorboard::TensorBoardSink>(live);
    sinks.push_back(tb.get());
  }
  TeeSink sink(sinks);
  std::mt19937 rng(17);
  std::vector<std::string> names{"enc/fc1", "fc2", "relu"};
  if (kind == "names") names = {"enc/a\nb", "say \"hi\" it's", "x\x01y caf\xc3\xa9\ttab"};
  for (int64_t step = 0; step < steps; ++step) {
    if (kind == "nan")
      sink.add_step(nan_step(step));
    else if (kind == "long")
      sink.add_step(long_step(step));
    else
      sink.add_step(basic_step(rng, step, names));
  }
  RunSummary summary;
  int64_t order = 0;
  for (const std::string& n : names)
    summary.architecture.nodes.push_back({n, "Linear", order++, 10, 10});
  sink.set_summary(summary);
  run.close();
  if (tb && !tb->close()) return 3;
  if (kind == "basic") {
    save_embedding(dir);
    save_compression(dir);
  }
  return 0;
}
