#include "sample_runs.h"

#include <cmath>
#include <limits>

#include "gradscope/core/stats/stats.h"
#include "gradscope/core/stats/tensor_view.h"
#include "gradscope/io/store/run_writer.h"

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

StepRecords sample_findings(const SampleRun& run, int64_t step) {
  StepRecords out;
  out.step = step;
  const StatsOptions options = run.thresholds.stats_options();
  if (step % 2 == 0) {
    ChannelRecord c;
    c.step = step;
    c.node = node_name(run, 1);
    for (int channel = 0; channel < 4; ++channel) {
      // Channels 0-2 dead like the node, channel 3 alive; the gradient reaches channel 3 only.
      std::vector<float> act = values(step, 10 + channel, Site::kActivation, 1.0, channel < 3 ? 1.0 : 0.0);
      std::vector<float> grad = values(step, 20 + channel, Site::kOutputGrad, channel < 3 ? 0.0 : 1e-3, 0.0);
      c.activation.push_back(compute(TensorView::contiguous(act.data(), DType::kFloat32, {64}), options));
      c.output_grad.push_back(compute(TensorView::contiguous(grad.data(), DType::kFloat32, {64}), options));
    }
    c.effective_rank = step == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 + 0.1 * static_cast<double>(step);
    out.channels.push_back(std::move(c));
  }
  out.similarities.push_back({step, node_name(run, 0), node_name(run, 2), 0.97});
  out.similarities.push_back({step, node_name(run, 2), node_name(run, 0), 0.97});
  // Attention of encoder/fc1, two heads, every third step: the second grows and collapses from
  // step 6 (table attention, schema 6, for the fuzzer to mutate).
  if (step % 3 == 0) {
    HeadStats calm, sharp;
    calm.queries = calm.fraction_queries = sharp.queries = sharp.fraction_queries = 32;
    calm.max_logit = 2.5;
    calm.entropy_sum = 32 * 2.0;
    calm.entropy_fraction_sum = 32 * 0.7;
    sharp.max_logit = step < 6 ? 3.0 : 150.0 * static_cast<double>(step);
    sharp.entropy_sum = step < 6 ? 60.0 : 0.5;
    sharp.entropy_fraction_sum = step < 6 ? 32 * 0.7 : 0.2;
    sharp.top_queries = step < 6 ? 0 : 30;
    out.attention.push_back({step, node_name(run, 0), {calm, sharp}});
  }
  return out;
}

RunSummary sample_summary(const SampleRun& run) {
  RunSummary s;
  s.thresholds = run.thresholds;
  for (int n = 0; n < static_cast<int>(std::size(kNodes)); ++n) {
    const int64_t parameters = kNodes[n].frozen ? 640 : 64 * (n + 1);
    s.architecture.nodes.push_back({node_name(run, n), kNodes[n].embedding ? "torch::nn::EmbeddingImpl" : "torch::nn::LinearImpl",
                                    n, parameters, kNodes[n].frozen ? 0 : parameters});
    if (!kNodes[n].frozen)
      s.values.push_back({node_name(run, n), kGradSnr, n == 2 ? std::numeric_limits<double>::infinity() : 0.5 * n});
  }
  s.architecture.nodes.push_back({"never_ran", "free", -1, 0, 0});
  s.warnings.push_back("node '" + node_name(run, 0) + "': scope matched 9 submodules, kept the first 3 (max_modules)");
  return s;
}

void write_sample_run(const std::string& dir, const SampleRun& run) {
  RunWriterOptions options;
  options.command_line = "train.py --fuzz-seed";
  options.thresholds = run.thresholds;
  options.overwrite = true;
  RunWriter writer(dir, options);
  for (int64_t step = 0; step < run.steps; ++step) {
    StepRecords findings = sample_findings(run, step);
    findings.records = sample_step(run, step);
    writer.add_step(findings);
    if (run.commit_every > 0 && step % run.commit_every == run.commit_every - 1) writer.commit();
  }
  writer.set_summary(sample_summary(run));
  writer.close();
}

}  // namespace gradscope::fuzz
