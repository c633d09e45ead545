// The language server's JSON-RPC 2.0 side: one message in, zero or more
// messages out. It holds the open documents and the run, and answers
// initialize, shutdown and hover; didOpen, didChange and didClose publish (or
// clear) each document's diagnostics.
//
//   gradscope::cli::LspServer server({"gradscope-runs", ""}, send, std::cerr);
//   server.handle(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
//   if (server.exited()) return server.exit_code();
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "lsp_run.h"
#include "lsp_source_index.h"

namespace gradscope::cli {

/// JSON-RPC and LSP error codes the server answers with.
enum LspErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kServerNotInitialized = -32002,
};

class LspServer {
 public:
  using Send = std::function<void(const nlohmann::json&)>;

  /// `source`: the command line's --runs/--run, which initializationOptions may
  /// replace.
  LspServer(LspRunSource source, Send send, std::ostream& log);

  /// Handles one message body (a JSON text, possibly invalid).
  void handle(const std::string& body);
  /// Answers a message that could not be framed (ParseError, id null) and logs
  /// why.
  void framing_error(const std::string& why);

  /// After the exit notification: 0 when shutdown came first, else 1 (as LSP
  /// specifies).
  bool exited() const { return exited_; }
  int exit_code() const { return shutdown_ ? 0 : 1; }

 private:
  struct Document {
    SourceLanguage language;
    std::vector<SourceDefinition> defs;
  };

  void request(const nlohmann::json& id, const std::string& method, const nlohmann::json& params);
  void notification(const std::string& method, const nlohmann::json& params);
  void open_or_change(const nlohmann::json& params, bool open);
  nlohmann::json hover(const nlohmann::json& params);
  // Reloads the run when it changed; then republishes every open document, and
  // says once (window/showMessage) why a run could not be read. True when it
  // republished.
  bool refresh_run();
  void publish(const std::string& uri);
  void error_response(const nlohmann::json& id, int code, const std::string& message);

  LspRunSource source_;
  LspRun run_;
  Send send_;
  std::ostream& log_;
  std::map<std::string, Document> documents_;
  bool initialized_ = false, shutdown_ = false, exited_ = false;
};

}  // namespace gradscope::cli
