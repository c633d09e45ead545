#include "cli_main.h"

#include <iostream>

#include "commands.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/version.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

char** stored_arguments = nullptr;

// Messages quote paths, node names and what the user typed: shown escaped.
int fail(int code, const std::string& message, bool hint) {
  std::cerr << "gradscope: error: " << gradscope::terminal_text(message) << "\n";
  if (hint) std::cerr << "run 'gradscope --help' for usage\n";
  return code;
}

int run_command(int argc, char** argv, AddCommands add) {
  CLI::App app{"gradscope: which part of a model is failing during training, how, since when, "
               "and what to do, with the evidence.",
               "gradscope"};
  app.set_version_flag("--version", std::string("gradscope ") + gradscope::kVersion);
  app.require_subcommand(1);
  int exit_code = kExitOk;
  add(app, exit_code);
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

char** main_arguments() { return stored_arguments; }

int cli_main(int argc, char** argv, AddCommands add) {
  stored_arguments = argv;
  watch_stdout();
  const int code = run_command(argc, argv, add);
  if (code == kExitData) return code;  // its error is said; one is enough
  // Whatever the command printed (help and version too) must have reached stdout.
  try {
    check_stdout();
  } catch (const gradscope::Error& e) {
    return fail(kExitData, e.what(), false);
  }
  return code;
}

}  // namespace gradscope::cli
