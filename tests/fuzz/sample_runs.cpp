#include "sample_runs.h"

#include <cmath>
#include <limits>

#include "gradscope/core/stats.h"
#include "gradscope/core/tensor_view.h"
#include "gradscope/io/run_writer.h"

namespace gradscope::fuzz {
namespace {

// What a node's tensors look like: gradient and activation scales, the share of exact zeros.
struct NodeShape {
  const char* name;
  const char* hostile_name;
  double grad_scale, activation_scale, zero_frac;
  bool embedding, frozen;
};

// Healthy, vanishing, exploding, dead, saturated; an embedding table; a frozen layer.
const NodeShape kNodes[] = {
    {"encoder/fc1", "enc\"oder\"/fc'1", 1e-2, 1.0, 0.0, false, false},
    {"encoder/relu", "</script><script>alert(1)</script>", 1e-3, 1.0, 0.99, false, false},
    {"encoder/fc2", "line\xE2\x80\xA8separator/\xE5\xB1\x82", 1e-10, 1.0, 0.0, false, false},
    {"decoder/tanh", "tab\there\nnewline", 1e-2, 120.0, 0.0, false, false},
    {"item_emb", "emb & <b>bold</b>", 5e4, 1.0, 0.0, true, false},
    {"backbone.0", nullptr, 1e-2, 1.0, 0.0, false, true},
};

// A deterministic pseudo-random stream in [-1, 1], one per (step, node, site).
std::vector<float> values(int64_t step, int node, Site site, double scale, double zero_frac) {
  uint64_t x = 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(step) * 1000003u + node * 101u + static_cast<unsigned>(site));
  std::vector<float> out(64);
  for (std::size_t i = 0; i < out.size(); ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double u = static_cast<double>(x % 2000001) / 1000000.0 - 1.0;
    const bool zero = static_cast<double>(i) < zero_frac * static_cast<double>(out.size());
    out[i] = zero ? 0.0f : static_cast<float>(scale * u);
  }
  return out;
}

std::string node_name(const SampleRun& run, int node) {
  const NodeShape& s = kNodes[node];
  if (!run.hostile_names) return s.name;
  return s.hostile_name ? s.hostile_name : std::string(300, 'n');
}

}  // namespace

std::vector<Record> sample_step(const SampleRun& run, int64_t step) {
  std::vector<Record> out;
  const StatsOptions options = run.thresholds.stats_options();
  for (int n = 0; n < static_cast<int>(std::size(kNodes)); ++n) {
    const NodeShape& s = kNodes[n];
    std::vector<Site> sites;
    if (s.frozen)
      sites = {Site::kFrozenParam, Site::kActivation};
    else if (s.embedding)
      sites = {Site::kEmbeddingRows, Site::kParam, Site::kUpdate, Site::kActivation};
    else
      sites = {Site::kPreActivation, Site::kActivation, Site::kOutputGrad,
               Site::kParamGrad,     Site::kParam,      Site::kUpdate};
    for (Site site : sites) {
      const bool grad =
          site == Site::kOutputGrad || site == Site::kParamGrad || site == Site::kEmbeddingRows;
      const double scale = grad                    ? s.grad_scale
                           : site == Site::kUpdate ? s.grad_scale * 1e-3
                                                   : s.activation_scale;
      std::vector<float> v =
          values(step, n, site, scale, site == Site::kActivation ? s.zero_frac : 0.0);
      if (run.nonfinite && grad && step >= run.steps / 2) {
        if (n == 0) v[3] = std::numeric_limits<float>::quiet_NaN();
        if (n == 3) v[5] = -std::numeric_limits<float>::infinity();
      }
      const auto view =
          TensorView::contiguous(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())});
      out.push_back(Record{step, node_name(run, n), site, compute(view, options)});
    }
  }
  return out;
}

void write_sample_run(const std::string& dir, const SampleRun& run) {
  RunWriterOptions options;
  options.command_line = "train.py --fuzz-seed";
  options.thresholds = run.thresholds;
  options.overwrite = true;
  RunWriter writer(dir, options);
  for (int64_t step = 0; step < run.steps; ++step) {
    for (Record& r : sample_step(run, step)) writer.add(std::move(r));
    writer.end_step();
    if (run.commit_every > 0 && step % run.commit_every == run.commit_every - 1) writer.commit();
  }
  writer.close();
}

}  // namespace gradscope::fuzz
