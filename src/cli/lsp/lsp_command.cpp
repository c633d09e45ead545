// gradscope lsp: a Language Server Protocol server over standard input and
// output that puts a run's findings on the source lines defining the flagged
// nodes (docs/editor.md). Standard output carries only protocol messages; what
// goes wrong is said on standard error.
#include <csignal>
#include <iostream>

#include "commands.h"
#include "lsp_server.h"
#include "lsp_transport.h"

namespace gradscope::cli {
namespace {

int run_lsp(const LspRunSource& source) {
  std::ios::sync_with_stdio(false);  // binary reads of bodies, not line-by-line C stdio
  // A client that goes away must not kill the server silently (exit 141): the write fails
  // instead, and the server says so and exits 3.
  std::signal(SIGPIPE, SIG_IGN);
  bool write_failed = false;
  LspServer server(
      source,
      [&](const nlohmann::json& message) {
        // Names in a run may hold invalid UTF-8: replaced, never an exception
        // mid-answer.
        if (!write_lsp_frame(
                std::cout, message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)))
          write_failed = true;
      },
      std::cerr);
  LspReader reader(std::cin);
  while (!server.exited() && !write_failed) {
    const std::optional<LspFrame> frame = reader.next();
    if (!frame) {
      if (reader.truncated()) {
        std::cerr << "gradscope: error: lsp: standard input ended in the "
                     "middle of a message\n";
        return kExitData;
      }
      // The client went away without exit: LSP says exit code 1.
      std::cerr << "gradscope: error: lsp: standard input closed before the "
                   "exit notification\n";
      return kExitUnhealthy;
    }
    if (!frame->error.empty())
      server.framing_error(frame->error);
    else
      server.handle(frame->body);
  }
  if (write_failed) {
    std::cerr << "gradscope: error: lsp: cannot write to standard output\n";
    return kExitData;
  }
  return server.exit_code();
}

}  // namespace

void add_lsp_command(CLI::App& app, int& exit_code) {
  auto source = std::make_shared<LspRunSource>();
  CLI::App* cmd = app.add_subcommand("lsp",
                                     "Language server over stdio: a run's findings "
                                     "on the lines defining its nodes");
  auto* runs = cmd->add_option("--runs", source->runs,
                               "folder of runs: the newest (run.db written last) is shown");
  cmd->add_option("--run", source->run, "one run directory to show")->excludes(runs);
  cmd->callback([source, &exit_code] { exit_code = run_lsp(*source); });
}

}  // namespace gradscope::cli
