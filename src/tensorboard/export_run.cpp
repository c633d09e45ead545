#include "gradscope/tensorboard/export_run.h"

#include <ctime>

#include "gradscope/core/error.h"
#include "gradscope/tensorboard/step_scalars.h"

namespace gradscope::tensorboard {
namespace {

// The run's start time ("2026-12-02T10:31:07Z") in seconds since the epoch; now when it does
// not parse (a run written by a newer writer), so TensorBoard still orders the events.
double start_seconds(const std::string& iso) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6)
    return wall_time_now();
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

ExportResult export_run(RunReader& reader, EventWriter& writer, const ExportInput& input) {
  const double wall_time = start_seconds(reader.metadata().start_time);
  StepScalars scalars(reader.metadata().thresholds);
  ExportResult result;
  // One step's records at a time: the reader delivers them in step order.
  std::vector<Record> step_records;
  int64_t step = 0, last_step = 0;
  bool any = false;
  StepSummary event;
  const auto write = [&](int64_t at) {
    if (event.empty()) return;
    if (!writer.write(at, wall_time, event)) throw Error(writer.error());
    ++result.events;
    event.clear();
  };
  const auto end_step = [&] {
    if (step_records.empty()) return;
    scalars.add(step_records, event);
    if (input.trees && step >= 0) add_tree_round_metrics(input.trees->report, static_cast<std::size_t>(step), event);
    write(step);
    step_records.clear();
  };
  RunVisitor visit;
  visit.record = [&](const Record& r) {
    if (any && r.step != step) end_step();
    step = r.step;
    last_step = any ? std::max(last_step, r.step) : r.step;
    any = true;
    step_records.push_back(r);
  };
  // The reader hands channel records over after every record of the range (io/store/run_reader.h),
  // so their histograms are events of their own, at their steps; TensorBoard orders each tag's
  // values by step, and a version-2 file is not purged for a step that goes back.
  visit.channel = [&](const ChannelRecord& c) {
    end_step();
    add_channel_histograms(c, event);
    write(c.step);
  };
  // Element histograms, then attention records, come last, a step's together: one event a step.
  int64_t pending_step = -1;
  const auto pend = [&](int64_t at) {
    end_step();
    if (pending_step >= 0 && at != pending_step) write(pending_step);
    pending_step = at;
  };
  visit.histogram = [&](const ElementHistogram& h) {
    pend(h.step);
    add_element_histograms({h}, event);
  };
  visit.attention = [&](const AttentionRecord& a) {
    pend(a.step);
    add_attention_scalars({a}, event);
  };
  visit.scalar = [&](const StepScalar& x) {
    pend(x.step);
    add_series_scalars({x}, x.step, event);
  };
  result.steps = reader.for_each(visit, {}, input.progress);
  end_step();
  if (pending_step >= 0) write(pending_step);
  if (input.embedding) {
    std::vector<EmbeddingReport> tables;
    std::vector<EmbeddingProfile> profiles;
    for (const EmbeddingTableSummary& t : input.embedding->tables) {
      tables.push_back(t.report);
      profiles.push_back(t.profile);
    }
    add_embedding_metrics(tables, event);
    add_embedding_profiles(profiles, event);
  }
  if (input.compression) add_compression_points(*input.compression, event);
  if (!input.report_text.empty()) event.text(kReportTag, report_markdown(input.report_text));
  write(last_step);
  if (!writer.close()) throw Error(writer.error());
  return result;
}

}  // namespace gradscope::tensorboard
