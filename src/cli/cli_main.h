// The main function both executables share: `gradscope` (the run tool) and `gradscope-demo`
// (the demo, which alone loads LibTorch and XGBoost) parse the same command line the same way,
// with the same messages and exit codes.
//
//   int main(int argc, char** argv) {
//     return gradscope::cli::cli_main(argc, argv, [](CLI::App& app, int& exit_code) {
//       gradscope::cli::add_report_command(app, exit_code);
//     });
//   }
#pragma once

#include <CLI/CLI.hpp>

namespace gradscope::cli {

/// Registers an executable's subcommands; each one's run sets `exit_code`.
using AddCommands = void (*)(CLI::App& app, int& exit_code);

/// Parses argv into the subcommands `add` registers and runs the chosen one. Returns the exit
/// code: 0 ok, 1 unhealthy run, 2 usage, 3 I/O or data (a failed write to stdout included);
/// errors go to stderr as "gradscope: error: ...".
int cli_main(int argc, char** argv, AddCommands add);

/// argv as cli_main received it, null-terminated as main's is: `gradscope demo` hands it on.
char** main_arguments();

}  // namespace gradscope::cli
