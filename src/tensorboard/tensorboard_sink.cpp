#include "gradscope/tensorboard/tensorboard_sink.h"

#include <iostream>

#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"

namespace gradscope::tensorboard {

TensorBoardSink::TensorBoardSink(const std::string& dir, TensorBoardSinkOptions options)
    : options_(std::move(options)),
      writer_(dir, options_.writer),
      scalars_(options_.thresholds),
      report_(std::make_unique<ReportBuilder>(options_.thresholds)),
      timeline_(options_.thresholds, 1),  // only the frame being closed: the summary keeps counts
      flow_(options_.thresholds) {
  last_flush_ = wall_time_now();
}

TensorBoardSink::~TensorBoardSink() { close(); }

void TensorBoardSink::add_step(const StepRecords& step) {
  if (closed_) return;
  last_step_ = step.step;
  for (const Record& r : step.records) {
    report_->add(r);
    timeline_.add(r);
    const int64_t closed = static_cast<int64_t>(timeline_.frames().size()) + timeline_.dropped();
    if (closed != frames_summarized_) {
      flow_.add(timeline_.frames().back());
      frames_summarized_ = closed;
    }
  }
  for (const ChannelRecord& c : step.channels) report_->add(c);
  for (const SimilarityRecord& s : step.similarities) report_->add(s);
  for (const AttentionRecord& a : step.attention) report_->add(a);
  for (const StepScalar& x : step.scalars) report_->add(x);
  if (writer_.failed()) return;  // training goes on; the findings text is still kept above
  // The loss of the steps the audit did not sample: an event each, at their own steps, first.
  for (std::size_t i = 0; i < step.scalars.size();) {
    const int64_t at = step.scalars[i].step;
    std::size_t j = i;
    while (j < step.scalars.size() && step.scalars[j].step == at) ++j;
    if (at != step.step) {
      StepSummary earlier;
      add_series_scalars(step.scalars, at, earlier);
      writer_.write(at, wall_time_now(), earlier);
    }
    i = j;
  }
  StepSummary event;
  add_series_scalars(step.scalars, step.step, event);
  scalars_.add(step.records, event);
  for (const ChannelRecord& c : step.channels) add_channel_histograms(c, event);
  add_element_histograms(step.histograms, event);
  add_attention_scalars(step.attention, event);
  const double now = wall_time_now();
  writer_.write(step.step, now, event);
  if (now - last_flush_ >= options_.flush_seconds) {
    writer_.flush();
    last_flush_ = now;
  }
  check();
}

void TensorBoardSink::set_summary(const RunSummary& summary) {
  if (closed_ || writer_.failed()) return;
  // Copies: a later step may still come, and a later summary replaces this one.
  Timeline timeline = timeline_;
  FlowSummaryBuilder flow = flow_;
  const int64_t before = static_cast<int64_t>(timeline.frames().size()) + timeline.dropped();
  timeline.finish();
  if (static_cast<int64_t>(timeline.frames().size()) + timeline.dropped() != before)
    flow.add(timeline.frames().back());
  Report report = report_->build();
  apply_node_values(report, summary.values);
  const FlowSummary fs = flow.finish(timeline.nodes());
  std::string text;
  for (const std::string& w : summary.warnings) text += "audit warning: " + terminal_text(w) + "\n";
  text += render_table(report, false) + render_flow_summary(fs) + "\n" +
          render_run_verdict(report, fs, nullptr, nullptr) + "\n";
  StepSummary event;
  event.text(kReportTag, report_markdown(text));
  writer_.write(last_step_, wall_time_now(), event);
  writer_.flush();
  check();
}

void TensorBoardSink::add_embedding(const EmbeddingRunSummary& summary) {
  if (closed_ || writer_.failed()) return;
  std::vector<EmbeddingReport> tables;
  std::vector<EmbeddingProfile> profiles;
  for (const EmbeddingTableSummary& t : summary.tables) {
    tables.push_back(t.report);
    profiles.push_back(t.profile);
  }
  StepSummary event;
  add_embedding_metrics(tables, event);
  add_embedding_profiles(profiles, event);
  if (!event.empty()) writer_.write(last_step_, wall_time_now(), event);
  writer_.flush();
  check();
}

void TensorBoardSink::add_tree_rounds(const TreeDynamicsReport& report) {
  if (closed_ || writer_.failed()) return;
  const double now = wall_time_now();
  for (std::size_t round = 0; round < report.per_round.size(); ++round) {
    StepSummary event;
    add_tree_round_metrics(report, round, event);
    if (!event.empty()) writer_.write(static_cast<int64_t>(round), now, event);
    last_step_ = std::max(last_step_, static_cast<int64_t>(round));
  }
  writer_.flush();
  check();
}

bool TensorBoardSink::close() {
  if (closed_) return !writer_.failed();
  closed_ = true;
  const bool ok = writer_.close();
  check();
  return ok;
}

void TensorBoardSink::check() {
  if (!writer_.failed() || reported_) return;
  reported_ = true;
  const std::string message =
      "tensorboard: " + writer_.error() + "; training goes on, no more events are written";
  if (options_.on_error)
    options_.on_error(message);
  else
    std::cerr << "gradscope: warning: " << terminal_text(message) << "\n";
}

}  // namespace gradscope::tensorboard
