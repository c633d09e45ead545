// The gradscope subcommands: each file registers one with its options and its run function.
#pragma once

#include <CLI/CLI.hpp>

#include "gradscope/core/error.h"

namespace gradscope::cli {

/// Exit codes of the gradscope command (also in the README).
enum ExitCode : int { kExitOk = 0, kExitUnhealthy = 1, kExitUsage = 2, kExitData = 3 };

/// A mistake in how the command was called that CLI11 cannot see; exits 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// Registers `gradscope demo`: in gradscope-demo, the demo itself (src/demo), whose run sets
/// `exit_code`; in gradscope, a launcher that execs gradscope-demo (demo_launcher.cpp).
void add_demo_command(CLI::App& app, int& exit_code);
/// The demo's line in `gradscope --help`, the same from both.
inline constexpr const char* kDemoSummary =
    "Train a healthy model and sick ones on real data and report where each fails";
/// Subcommands over saved runs (src/cli/<name>_command.cpp).
void add_report_command(CLI::App& app, int& exit_code);
void add_animate_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_diff_command(CLI::App& app, int& exit_code);
void add_ls_command(CLI::App& app, int& exit_code);
void add_html_command(CLI::App& app, int& exit_code);
/// `gradscope trees MODEL`: a boosted model's rounds, judged and saved as a run.
void add_trees_command(CLI::App& app, int& exit_code);
void add_compress_command(CLI::App& app, int& exit_code);
/// `gradscope upgrade RUN`: a run before schema 5 moved to it, side files into run.db.
void add_upgrade_command(CLI::App& app, int& exit_code);
/// `gradscope lsp`: a language server showing a run's findings in the editor (lsp_*.cpp).
void add_lsp_command(CLI::App& app, int& exit_code);

}  // namespace gradscope::cli
