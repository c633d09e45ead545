// series_finding: the loss series' verdicts (LOSS_SPIKE, DIVERGENCE) as findings, with the
// nodes whose gradient burst first and a clipping value from the measured norms.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/findings/findings.h"
#include "gradscope/core/findings/kinds.h"

namespace gradscope {
namespace {

std::string steps_text(int64_t n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); }

// Whether some node's gradient burst before the loss moved (not only at its step): then the
// gradients led, and clipping is the remedy; a burst at the loss's own step has one cause with
// it (the weights of the step before, or the batch), and says nothing of which came first.
bool gradients_led(const SeriesReport& s) { return !s.leads.empty() && s.leads.front().lead > 0; }

// "gradients burst first in rnn at step 2 (312x its band, 1 step before), then decoder ...";
// when every burst is at the loss's step: "gradients burst at the same step in rnn (312x ...)".
std::string leads_text(const SeriesReport& s) {
  if (s.leads.empty()) return "";
  const bool led = gradients_led(s);
  std::string out = led ? "gradients burst first in " : "gradients burst at the same step in ";
  for (std::size_t i = 0; i < s.leads.size() && i < 3; ++i) {
    const SpikeLead& l = s.leads[i];
    out += (i ? ", then " : "") + l.node +
           (led ? " at step " + std::to_string(l.step) + " (" + shown_number(l.ratio) + "x its recent largest, " +
                      (l.lead == 0 ? std::string("the same step") : steps_text(l.lead) + " before") + ")"
                : " (" + shown_number(l.ratio) + "x its recent largest)");
  }
  if (s.leads.size() > 3) out += ", and " + std::to_string(s.leads.size() - 3) + " more nodes";
  return out;
}

// What the measured norms before clipping say about a clipping value.
std::string clip_text(const SeriesReport& s) {
  if (s.grad_norm_steps == 0 || std::isnan(s.grad_norm_median))
    return "clip the global gradient norm (torch.nn.utils.clip_grad_norm_, or audit.clip_grad_norm_, which also "
           "records the norms before clipping so the next report can suggest a value)";
  std::string out = "clip the global gradient norm near the typical norm before clipping (measured";
  if (s.grad_norm_steps_before > 0)
    out += " over the " + steps_text(s.grad_norm_steps_before) + " before step " + std::to_string(s.onset()) +
           ": median " + shown_number(s.grad_norm_median_before) + ", largest " + shown_number(s.grad_norm_max_before) +
           "; over the run";
  else
    out += " over";
  out += " " + steps_text(s.grad_norm_steps) + ": median " + shown_number(s.grad_norm_median) + ", 99th percentile " +
         shown_number(s.grad_norm_p99) + ", largest " + shown_number(s.grad_norm_max) + " at step " +
         std::to_string(s.grad_norm_max_step) + ")";
  if (s.clip_known_steps > 0)
    out += "; clipping acted at " + std::to_string(s.clipped_steps) + " of " + steps_text(s.clip_known_steps);
  return out;
}

// Whether the run clips already: clipping acted at some step whose norms were recorded. Then
// the updates overshot with their norm held, and a clipping value is not the remedy.
bool already_clips(const SeriesReport& s) { return s.clip_known_steps > 0 && s.clipped_steps > 0; }

// The advice against an overshooting update: clipping with a measured value, or, where the run
// clips already, the learning rate first.
std::string overshoot_text(const SeriesReport& s) {
  if (!already_clips(s)) return clip_text(s) + ", or lower the learning rate";
  return "lower the learning rate: clipping already acted at " + std::to_string(s.clipped_steps) + " of " +
         steps_text(s.clip_known_steps) + ", so the updates overshot with their norm held (a learning rate raised by a "
         "schedule or a resumed run does this)";
}

std::string divergence_premise(const SeriesReport& s) {
  std::string out;
  if (s.divergence_nonfinite && s.divergence_value != s.divergence_value)  // NaN at the onset itself
    out = "the loss became " + shown_number(s.divergence_value) + " at step " + std::to_string(s.divergence_step);
  else if (s.divergence_nonfinite && !std::isfinite(s.divergence_value))
    out = "the loss became " + shown_number(s.divergence_value) + " at step " + std::to_string(s.divergence_step);
  else
    out = "the loss left its band at step " + std::to_string(s.divergence_step) + " (" +
          shown_number(s.divergence_value) + ", above the highest of the losses before it, " +
          shown_number(s.divergence_level) + ") and " +
          (s.divergence_nonfinite ? "then became non-finite at step " + std::to_string(s.first_nonfinite_loss)
           : s.divergence_back >= 0
               ? "stayed above it until step " + std::to_string(s.divergence_back) + " (" +
                     steps_text(s.divergence_back - s.divergence_step) + ")"
               : std::string("did not come back"));
  out += "; last loss " + shown_number(s.last_loss) + " at step " + std::to_string(s.last_loss_step) +
         ", lowest " + shown_number(s.min_loss) + " at step " + std::to_string(s.min_loss_step);
  return out;
}

std::string spike_premise(const SeriesReport& s) {
  const SeriesSpike& p = s.spikes.front();
  std::string out = "loss " + shown_number(p.value) + " at step " + std::to_string(p.step) +
                    (std::isnan(p.batch) ? std::string() : " (batch " + shown_number(p.batch) + ")");
  if (std::isfinite(p.z))
    out += ", " + shown_number(std::round(p.z * 10) / 10) + " sd above its band (mean " + shown_number(p.band_mean) +
           ", sd " + shown_number(p.band_sd) + " over the losses before it)";
  if (p.early_rule)
    out += std::string(std::isfinite(p.z) ? "; " : ", ") + shown_number(p.value / p.early_max) +
           "x the largest early loss " + shown_number(p.early_max);
  out += "; " + std::to_string(s.spike_count) + (s.spike_count == 1 ? " spike" : " spikes") + " in " +
         steps_text(s.loss_steps);
  if (s.spike_count > 1) {
    out += " (steps ";
    for (std::size_t i = 0; i < s.spikes.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(s.spikes[i].step);
    if (s.spike_count > 8) out += ", ...";
    out += ")";
  }
  return out;
}

// A finite loss that float32 cannot hold: the value is the finding, whatever the band says.
Finding out_of_range_finding(const SeriesReport& s) {
  Finding f;
  f.kind = FindingKind::kLoss;
  f.type = kLossOutOfRange;
  f.since_step = s.first_out_of_range_step;
  f.premise = "loss " + shown_number(s.first_out_of_range_loss) + " at step " +
              std::to_string(s.first_out_of_range_step) + ", beyond float32's range (largest " +
              shown_number(std::numeric_limits<float>::max()) + "); " + std::to_string(s.out_of_range_losses) + " of " +
              steps_text(s.loss_steps) + " had such a loss";
  f.implies = "No float32 or bfloat16 network computes a loss this size (it would overflow to Inf): the value "
              "handed to the audit is wrong, not the training. A sum over the batch in float64 where a mean was meant, "
              "an uninitialised or mis-scaled variable, or a loss term divided by a near-zero count do this. It was "
              "kept out of the loss band, so LOSS_SPIKE and DIVERGENCE judge the other losses as they are.";
  f.action = "Print the loss passed at step " + std::to_string(s.first_out_of_range_step) +
             " beside its terms and fix how it is computed; until then, the loss curve and anything that reads it "
             "(schedulers on plateau, early stopping) see a wrong value.";
  f.expected_effect = "Every loss within float32's range: no LOSS_OUT_OF_RANGE on the next run.";
  f.confidence = Confidence::kHigh;  // a count of values past a fixed limit
  f.evidence = {{"loss", s.first_out_of_range_loss, FindingMeasure::kNone, ""},
                {"loss_magnitude", std::fabs(s.first_out_of_range_loss), std::numeric_limits<float>::max(), ">"},
                {"out_of_range_losses", static_cast<double>(s.out_of_range_losses), FindingMeasure::kNone, ""}};
  return f;
}

}  // namespace

std::string series_headline(const SeriesReport& s) {
  std::string line;
  if (s.diverged()) {
    line = std::string(kDivergence) + " at step " + std::to_string(s.divergence_step) + " (" +
           (s.divergence_nonfinite && !std::isfinite(s.divergence_value)
                ? "loss " + shown_number(s.divergence_value)
                : "loss " + shown_number(s.divergence_value) + " after at most " + shown_number(s.divergence_level) +
                      ", last " + shown_number(s.last_loss)) +
           ")";
  } else if (s.spike_count > 0 && !s.spikes.empty()) {
    const SeriesSpike& p = s.spikes.front();
    line = std::string(kLossSpike) + " at step " + std::to_string(p.step) + " (loss " + shown_number(p.value) +
           (std::isfinite(p.z) ? ", " + shown_number(std::round(p.z * 10) / 10) + " sd above its band" : std::string()) +
           (s.spike_count > 1 ? "; " + std::to_string(s.spike_count) + " spikes" : std::string()) + ")";
  } else if (s.out_of_range_losses > 0) {
    return std::string(kLossOutOfRange) + " at step " + std::to_string(s.first_out_of_range_step) + " (loss " +
           shown_number(s.first_out_of_range_loss) + ")";
  } else {
    return "";
  }
  const std::string leads = leads_text(s);
  return leads.empty() ? line : line + "; " + leads;
}

std::vector<Finding> series_findings(const SeriesReport& s, const Thresholds& t) {
  std::vector<Finding> out;
  const std::string leads = leads_text(s);
  if (s.diverged()) {
    Finding f;
    f.kind = FindingKind::kLoss;
    f.type = kDivergence;
    f.since_step = s.divergence_step;
    f.premise = divergence_premise(s) + (leads.empty() ? "" : "; " + leads);
    f.implies = std::string("Training blew up: the weights jumped so far that the loss left the range it had ") +
                (s.divergence_back >= 0 ? "for " + steps_text(s.divergence_back - s.divergence_step) +
                                              " before it came back, the steps in between wasted"
                 : s.divergence_nonfinite ? "and became NaN or Inf"
                                          : "and never returned") +
                ". What other flags report after this step (saturation, stagnation, NaN) are its effects.";
    f.action = "Restart from a checkpoint before step " + std::to_string(s.divergence_step) + " and " +
               (already_clips(s) ? overshoot_text(s) + "; or lengthen the warm-up"
                                 : clip_text(s) + "; or lower the learning rate or lengthen the warm-up") +
               (s.leads.empty() ? std::string()
                : "; look first at " + s.leads.front().node +
                      (gradients_led(s) ? ", which moved first" : ", whose gradient burst most")) +
               ".";
    f.expected_effect = "The loss stays within its band: no DIVERGENCE and no LOSS_SPIKE on the next run.";
    // Counted, not estimated: the loss stayed out for divergence_steps losses in a row (or was
    // NaN/Inf), which no noise around a falling loss does.
    f.confidence = Confidence::kHigh;
    f.evidence = {{"divergence_step", static_cast<double>(s.divergence_step), FindingMeasure::kNone, ""},
                  {"loss_at_onset", s.divergence_value, s.divergence_level, ">"},
                  {"last_loss", s.last_loss, FindingMeasure::kNone, ""},
                  {"min_loss", s.min_loss, FindingMeasure::kNone, ""},
                  {"grad_norm_median", s.grad_norm_median, FindingMeasure::kNone, ""},
                  {"grad_norm_p99", s.grad_norm_p99, FindingMeasure::kNone, ""},
                  {"grad_norm_max", s.grad_norm_max, FindingMeasure::kNone, ""}};
    for (const SpikeLead& l : s.leads)
      f.evidence.push_back({"lead_steps:" + l.node, static_cast<double>(l.lead), FindingMeasure::kNone, ""});
    out.push_back(std::move(f));
  }
  if (s.spike_count > 0 && !s.spikes.empty()) {
    const SeriesSpike& p = s.spikes.front();
    Finding f;
    f.kind = FindingKind::kLoss;
    f.type = kLossSpike;
    f.since_step = p.step;
    f.premise = spike_premise(s) + (!s.diverged() && !leads.empty() ? "; " + leads : "");
    f.implies =
        "The loss jumped far out of its recent band at this step and came back: one batch unlike the others (a "
        "data fault, a mislabelled or corrupted batch), or an update that overshot.";
    f.action = "Inspect the batch of step " + std::to_string(p.step) +
               (std::isnan(p.batch) ? std::string() : " (batch " + shown_number(p.batch) + ")") +
               " (inputs, labels, sequence lengths); skip it if it is faulty. " +
               (gradients_led(s) ? "The gradients burst before the loss did: " + overshoot_text(s) + "."
                : s.leads.empty()
                    ? "If it is not, the update overshot: " + overshoot_text(s) + "."
                    : std::string("The gradients burst at the same step: the batch moved both, so look at it before the "
                                  "learning rate."));
    f.expected_effect = "No loss above mean + " + shown_number(t.spike_sigma) + " sd of its last " +
                        std::to_string(t.spike_window) + " values.";
    const bool strong = (std::isfinite(p.z) && p.z >= 2 * t.spike_sigma) || p.early_rule;
    f.confidence = strong ? Confidence::kHigh : Confidence::kMedium;
    f.evidence = {{"z", p.z, t.spike_sigma, ">"},
                  {"loss", p.value, FindingMeasure::kNone, ""},
                  {"band_mean", p.band_mean, FindingMeasure::kNone, ""},
                  {"band_sd", p.band_sd, FindingMeasure::kNone, ""},
                  {"spikes", static_cast<double>(s.spike_count), FindingMeasure::kNone, ""}};
    out.push_back(std::move(f));
  }
  if (s.out_of_range_losses > 0) out.push_back(out_of_range_finding(s));
  return out;
}

}  // namespace gradscope
