// libFuzzer target: the input is a run's embedding.json document, put into a real saved run's
// run.db (the bytes as they are, whatever they hold), read by load_embedding_summary and shown
// the way `gradscope report` (text and --json) and `gradscope html`
// show it (the page as html_page.h renders it). A gradscope::Error is an answer. Anything else
// (a crash, a sanitizer report, another exception, a hang, unbounded memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/render/run_report.h"
#include "html_page.h"
#include "run_loading.h"
#include "sample_runs.h"

namespace {

volatile std::size_t g_rendered = 0;

const gradscope::fuzz::ScratchDir& scratch() {
  static const gradscope::fuzz::ScratchDir dir;
  return dir;
}

// The run the embedding tables belong to, read once as `gradscope report` reads it.
const gradscope::cli::LoadedRun& saved_run() {
  static const gradscope::cli::LoadedRun run = [] {
    gradscope::fuzz::write_sample_run(scratch().path(), {});
    return gradscope::cli::load_run(scratch().path(), false, {},
                                    /*series=*/true);  // as `gradscope html`
  }();
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gradscope::fuzz::silence_standard_streams();
  saved_run();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace gradscope;
  const cli::LoadedRun& run = saved_run();
  gradscope::put_run_document(run.path, "embedding.json", std::string(reinterpret_cast<const char*>(data), size));
  fuzz::within_budget(size, [&] {
    try {
      const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
      const EmbeddingRunSummary* e = embedding ? &*embedding : nullptr;
      if (e) g_rendered = g_rendered + render_embedding_findings(*e).size();
      g_rendered = g_rendered + embedding_verdict(e).size() +
                   render_run_json(run.meta, run.report, run.flow, e).size();
      g_rendered = g_rendered + static_cast<std::size_t>(run_unhealthy(run.report, run.flow, e));
      g_rendered = g_rendered + fuzz::render_html_page(run, e).size();
    } catch (const Error&) {
    }
  });
  return 0;
}
