// The run the language server shows: the newest run under a folder (or one
// named), loaded with its findings, and re-read when its database changes on
// disk.
//
//   gradscope::cli::LspRun run({"gradscope-runs", ""});
//   if (run.refresh()) republish();   // loaded anew, or its error changed
//   for (const auto& f : run.findings()) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/findings/findings.h"
#include "gradscope/core/audit/report.h"

namespace gradscope::cli {

/// Where the run comes from: `run` names one run directory; else the newest run
/// under `runs`.
struct LspRunSource {
  std::string runs, run;
};

class LspRun {
 public:
  LspRun() = default;
  explicit LspRun(LspRunSource source) : source_(std::move(source)) {}

  /// Finds the run again and reloads it when another run is now the newest or
  /// its files' times or sizes changed. Returns true when what it holds changed
  /// (findings or error).
  bool refresh();

  /// Why no run is held ("" when one is): no folder configured, no runs, a
  /// damaged run.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  int64_t steps() const { return steps_; }
  const Report& report() const { return report_; }
  /// Every finding of the run (io/render/findings_json.h's run_findings: module, flow,
  /// embedding, trees).
  const std::vector<Finding>& findings() const { return findings_; }

 private:
  LspRunSource source_;
  std::string signature_;  // path, sizes and times of the files last read
  std::string error_, path_, name_;
  int64_t steps_ = 0;
  Report report_;
  std::vector<Finding> findings_;
};

}  // namespace gradscope::cli
