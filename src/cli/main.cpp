// gradscope: diagnostics for training runs. Turns exceptions into messages and exit codes:
// 0 ok, 1 unhealthy run, 2 usage, 3 I/O or data (a failed write to stdout included).
#include <iostream>

#include "commands.h"
#include "gradscope/io/safe_text.h"
#include "gradscope/version.h"
#include "run_loading.h"

namespace {

// Messages quote paths, node names and what the user typed: shown escaped.
int fail(int code, const std::string& message, bool hint) {
  std::cerr << "gradscope: error: " << gradscope::terminal_text(message) << "\n";
  if (hint) std::cerr << "run 'gradscope --help' for usage\n";
  return code;
}

int run_command(int argc, char** argv) {
  using namespace gradscope::cli;
  CLI::App app{"gradscope: which part of a model is failing during training, how, since when, "
               "and what to do, with the evidence.",
               "gradscope"};
  app.set_version_flag("--version", std::string("gradscope ") + gradscope::kVersion);
  app.require_subcommand(1);
  int exit_code = kExitOk;
  add_demo_command(app, exit_code);
  add_report_command(app, exit_code);
  add_animate_command(app, exit_code);
  add_export_command(app, exit_code);
  add_diff_command(app, exit_code);
  add_ls_command(app, exit_code);
  add_html_command(app, exit_code);
  add_trees_command(app, exit_code);
  add_compress_command(app, exit_code);
  set_command_line(argc, argv);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version: to stdout, exit 0
  } catch (const CLI::ParseError& e) {
    return fail(kExitUsage, e.what(), true);
  } catch (const UsageError& e) {
    return fail(kExitUsage, e.what(), true);
  } catch (const gradscope::Error& e) {
    return fail(kExitData, e.what(), false);
  } catch (const std::exception& e) {
    return fail(kExitData, e.what(), false);
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gradscope::cli;
  watch_stdout();
  const int code = run_command(argc, argv);
  if (code == kExitData) return code;  // its error is said; one is enough
  // Whatever the command printed (help and version too) must have reached stdout.
  try {
    check_stdout();
  } catch (const gradscope::Error& e) {
    return fail(kExitData, e.what(), false);
  }
  return code;
}
