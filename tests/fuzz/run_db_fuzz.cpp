// libFuzzer target: the input is a saved run (run.db, and optionally its run.db-wal: see
// run_input.h), read the way `gradscope report`, `export`, `animate` and `html` read a run
// (load_run, then every renderer of those commands, the HTML page as html_page.h renders it;
// RunReader alone for export --format jsonl), strict and with --partial. A gradscope::Error is
// an answer. Anything else (a crash, a sanitizer report, another exception, a hang, unbounded
// memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "gradscope/io/render/csv.h"
#include "gradscope/io/render/flow_export.h"
#include "gradscope/io/render/heatmap.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/table.h"
#include "html_page.h"
#include "run_input.h"
#include "run_loading.h"

namespace {

using gradscope::fuzz::ScratchDir;

// Output lengths, summed so the renderers' work cannot be optimised away.
volatile std::size_t g_rendered = 0;

void sink(const std::string& text) { g_rendered = g_rendered + text.size(); }

// Each reader starts from the input's bytes: a reader that changed the files (a WAL replayed
// into run.db) must not hide the input from the next one.
void lay_out(const ScratchDir& dir, const gradscope::fuzz::RunFiles& files) {
  dir.clear();
  dir.write("run.db", reinterpret_cast<const uint8_t*>(files.db.data()), files.db.size());
  if (!files.wal.empty())
    dir.write("run.db-wal", reinterpret_cast<const uint8_t*>(files.wal.data()), files.wal.size());
}

// gradscope report [--json|--csv], export --format json|csv, animate, html. False when the
// read or a renderer threw.
bool load_and_render(const ScratchDir& dir, bool partial, bool render) {
  using namespace gradscope;
  try {
    const cli::LoadedRun run = cli::load_run(dir.path(), partial, {}, /*series=*/true);
    if (!render) return true;
    sink(render_run_header(run.meta, run.path) + render_table(run.report) +
         render_flow_summary(run.flow));
    sink(render_verdict(run.report));
    sink(render_run_json(run.meta, run.report, run.flow, nullptr, nullptr, &run.summary, &run.damage));
    sink(render_json(run.report));
    sink(render_csv(run.report));
    sink(render_frames_json(run.timeline));
    sink(render_frames_csv(run.timeline));
    for (HeatmapMetric m : {HeatmapMetric::kFlowIntensity, HeatmapMetric::kGradNorm}) {
      HeatmapOptions h;
      h.metric = m;
      h.scale = m == HeatmapMetric::kGradNorm ? HeatmapScale::kLog : HeatmapScale::kLinear;
      sink(render_heatmap(run.timeline, h));
    }
    g_rendered = g_rendered + static_cast<std::size_t>(run_unhealthy(run.report, run.flow));
    sink(fuzz::render_html_page(run, nullptr));  // html: the run has no embedding.json
    return true;
  } catch (const Error&) {
    return false;
  }
}

// gradscope export --format jsonl: streams the records without building a report. False when
// the read threw.
bool stream_records(const ScratchDir& dir, bool partial, bool render) {
  using namespace gradscope;
  try {
    RunReader reader(dir.path(), ReadOptions{partial});
    if (reader.step_count() == 0) return true;
    reader.for_each([render](const Record& r) {
      if (render) sink(record_jsonl(r));
    });
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gradscope::fuzz::silence_standard_streams();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const ScratchDir dir;
  const gradscope::fuzz::RunFiles files = gradscope::fuzz::split_run_input(data, size);
  // Strict, then --partial. When the strict read succeeded, the partial one reads the same
  // records (it differs only where strict throws), so rendering them again would only cost
  // time: about half of each input's.
  lay_out(dir, files);
  const bool report_read = load_and_render(dir, false, true);
  lay_out(dir, files);
  const bool records_read = stream_records(dir, false, true);
  lay_out(dir, files);
  load_and_render(dir, true, !report_read);
  lay_out(dir, files);
  stream_records(dir, true, !records_read);
  return 0;
}
