// libFuzzer target: the input is what an editor writes to `gradscope lsp`'s standard input:
// framed JSON-RPC messages (or anything else), read by the server's framing and handled one by
// one, as lsp_command.cpp does, with a saved run behind the diagnostics and hovers. Nothing may
// escape the server: a framing error, a bad message or a source file that indexes to nothing is
// answered on the protocol. Anything else (a crash, a sanitizer report, an exception, an input
// over its time budget (fuzz_support.h), unbounded memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

#include "fuzz_support.h"
#include "lsp_server.h"
#include "lsp_transport.h"
#include "sample_runs.h"

namespace {

volatile std::size_t g_sent = 0;

const gradscope::fuzz::ScratchDir& scratch() {
  static const gradscope::fuzz::ScratchDir dir;
  return dir;
}

// A stream that drops what the server logs.
std::ostream& nowhere() {
  static std::ostringstream sink;
  sink.str("");
  return sink;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gradscope::fuzz::silence_standard_streams();
  gradscope::fuzz::write_sample_run(scratch().path(), {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace gradscope::cli;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  gradscope::fuzz::within_budget(size, [&] {
    LspServer server(
        LspRunSource{"", scratch().path()},
        [](const nlohmann::json& message) {
          g_sent = g_sent + message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
        },
        nowhere());
    LspReader reader(in);
    while (!server.exited()) {
      const std::optional<LspFrame> frame = reader.next();
      if (!frame) break;
      if (!frame->error.empty())
        server.framing_error(frame->error);
      else
        server.handle(frame->body);
    }
  });
  return 0;
}
