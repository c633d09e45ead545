// gradscope export RUN --format json|csv|jsonl|tensorboard|documents: the frames (json, csv),
// every record (jsonl), a TensorBoard event file in a folder (tensorboard, docs/tensorboard.md),
// or the run's documents as files in a folder (documents: embedding.json, trees.json, ...,
// io/store/run_documents.h; what runs before schema 5 kept beside run.db).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "commands.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/render/flow_export.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/terminal.h"
#include "gradscope/tensorboard/export_run.h"
#include "report_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct ExportOptions {
  std::string run, format, output;
  bool partial = false;
};

// Two passes over the run: the report (whole-run judgement, a few values per node), then the
// steps streamed into events one at a time, so memory does not grow with the run's length.
int export_tensorboard(const ExportOptions& opt) {
  if (opt.output.empty()) throw UsageError("--format tensorboard needs -o DIR (the folder for the event file)");
  const LoadedRun run = load_run(opt.run, opt.partial, {}, false, /*frames=*/false);
  const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
  const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
  tensorboard::EventWriter writer(opt.output);
  tensorboard::ExportInput in;
  in.report_text = render_report_text(run, embedding ? &*embedding : nullptr, trees ? &*trees : nullptr);
  in.embedding = embedding ? &*embedding : nullptr;
  in.trees = trees ? &*trees : nullptr;
  const std::optional<compress::MeasuredComparison> compression = load_measured_comparison(run.path);
  in.compression = compression ? &*compression : nullptr;
  RunReader reader(opt.run, ReadOptions{opt.partial});
  ProgressBar bar("exporting " + opt.run);
  in.progress = [&](int64_t done, int64_t total) { bar.update(done, total); };
  const tensorboard::ExportResult result = tensorboard::export_run(reader, writer, in);
  bar.finish();
  print_warnings(reader);
  std::cout << "wrote " << result.events << " events over " << result.steps << " steps to " << terminal_text(writer.path()) << "\n";
  check_stdout();
  return kExitOk;
}

// Each document the run has, written as a file of its name into -o DIR.
int export_documents(const ExportOptions& opt) {
  if (opt.output.empty()) throw UsageError("--format documents needs -o DIR (the folder for the files)");
  RunReader(opt.run, ReadOptions{opt.partial});  // a clear error for what is not a run
  const std::vector<std::string> written = export_run_documents(opt.run, opt.output);
  for (const std::string& name : written)
    std::cout << "wrote " << terminal_text((std::filesystem::path(opt.output) / name).string()) << "\n";
  if (written.empty()) std::cout << "run '" << terminal_text(opt.run) << "' has no documents (a run of records only)\n";
  check_stdout();
  return kExitOk;
}

int run_export(const ExportOptions& opt) {
  if (opt.format == "tensorboard") return export_tensorboard(opt);
  if (opt.format == "documents") return export_documents(opt);
  std::ofstream file;
  if (!opt.output.empty()) {
    file.open(opt.output, std::ios::binary);
    if (!file) throw Error("cannot write '" + opt.output + "'");
  }
  std::ostream& out = opt.output.empty() ? std::cout : file;
  if (opt.format == "jsonl") {
    // Streams record by record: no frames are built.
    RunReader reader(opt.run, ReadOptions{opt.partial});
    if (reader.step_count() == 0) throw Error("run '" + opt.run + "': no steps recorded");
    ProgressBar bar("exporting " + opt.run);
    reader.for_each([&](const Record& r) { out << record_jsonl(r); }, {},
                    [&](int64_t done, int64_t total) { bar.update(done, total); });
    bar.finish();
    print_warnings(reader);
  } else {
    const LoadedRun run = load_run(opt.run, opt.partial);
    out << (opt.format == "json" ? render_frames_json(run.timeline) : render_frames_csv(run.timeline));
  }
  if (opt.output.empty()) {
    check_stdout();
  } else {
    file.close();  // a failed flush shows only here
    if (!file) throw Error("cannot write '" + opt.output + "'");
  }
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a saved run's frames (json, csv), records (jsonl), TensorBoard events or documents");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  cmd->add_option("--format", opt->format,
                  "json (frames), csv (one row per node per step), jsonl (records), tensorboard (event file in -o DIR), "
                  "documents (the documents kept inside the run's run.db, each written out as a file of its "
                  "name in -o DIR: embedding.json, trees.json, units.json, rows.json, compression.json and the "
                  "auto-fix log audit.jsonl, those the run has)")
      ->required()
      ->check(CLI::IsMember({"json", "csv", "jsonl", "tensorboard", "documents"}));
  cmd->add_option("-o,--output", opt->output, "file to write (default: stdout); the folder for tensorboard and documents");
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_export(*opt); });
}

}  // namespace gradscope::cli
