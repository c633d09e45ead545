#include "lsp_server.h"

#include "gradscope/core/error.h"
#include "lsp_diagnostics.h"

namespace gradscope::cli {
namespace {

using Json = nlohmann::json;

// A message the client sent with the wrong shape: answered InvalidParams,
// logged.
class BadParams : public Error {
 public:
  using Error::Error;
};

const Json& field(const Json& object, const char* key, Json::value_t type,
                  const std::string& where) {
  if (!object.is_object() || !object.contains(key) || object.at(key).type() != type)
    throw BadParams(where + ": '" + key + "' missing or of the wrong type");
  return object.at(key);
}

const std::string& text_field(const Json& object, const char* key, const std::string& where) {
  return field(object, key, Json::value_t::string, where).get_ref<const std::string&>();
}

int int_field(const Json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number_integer())
    throw BadParams(where + ": '" + key + "' missing or not an integer");
  return object.at(key).get<int>();
}

}  // namespace

LspServer::LspServer(LspRunSource source, Send send, std::ostream& log)
    : source_(std::move(source)), run_(source_), send_(std::move(send)), log_(log) {}

void LspServer::error_response(const Json& id, int code, const std::string& message) {
  send_({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void LspServer::framing_error(const std::string& why) {
  log_ << "gradscope: error: lsp: " << why << "; message skipped\n";
  error_response(nullptr, kParseError, why);
}

void LspServer::handle(const std::string& body) {
  Json msg = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (msg.is_discarded()) {
    log_ << "gradscope: error: lsp: a message is not valid JSON (" << body.size() << " bytes)\n";
    error_response(nullptr, kParseError, "message is not valid JSON");
    return;
  }
  const Json id = msg.is_object() && msg.contains("id") ? msg["id"] : Json();
  const bool id_ok = id.is_null() || id.is_string() || id.is_number_integer();
  if (!msg.is_object() || !id_ok || (msg.contains("method") && !msg["method"].is_string())) {
    log_ << "gradscope: error: lsp: not a JSON-RPC request or notification\n";
    error_response(id_ok ? id : Json(), kInvalidRequest,
                   "not a JSON-RPC 2.0 request or notification");
    return;
  }
  if (!msg.contains("method")) return;  // a response to a request we never send
  const std::string method = msg["method"];
  const Json params = msg.contains("params") ? msg["params"] : Json::object();
  try {
    if (msg.contains("id"))
      request(id, method, params);
    else
      notification(method, params);
  } catch (const BadParams& e) {
    log_ << "gradscope: error: lsp: " << e.what() << "\n";
    if (msg.contains("id")) error_response(id, kInvalidParams, e.what());
  } catch (const Json::exception& e) {
    log_ << "gradscope: error: lsp: " << method << ": " << e.what() << "\n";
    if (msg.contains("id")) error_response(id, kInvalidParams, e.what());
  }
}

void LspServer::request(const Json& id, const std::string& method, const Json& params) {
  if (method == "initialize") {
    // LSP allows one: a second would silently swap the run under the open files.
    if (initialized_) return error_response(id, kInvalidRequest, "initialize was already called");
    const Json& options = params.is_object() && params.contains("initializationOptions")
                              ? params["initializationOptions"]
                              : Json();
    // The editor's settings name the run when they say so; else the command
    // line's stays.
    if (options.is_object() && options.contains("run") && options["run"].is_string())
      source_ = {"", options["run"].get<std::string>()};
    else if (options.is_object() && options.contains("runs") && options["runs"].is_string())
      source_ = {options["runs"].get<std::string>(), ""};
    run_ = LspRun(source_);
    initialized_ = true;
    send_(
        {{"jsonrpc", "2.0"},
         {"id", id},
         {"result",
          {{"capabilities",
            {{"textDocumentSync", {{"openClose", true}, {"change", 1}}}, {"hoverProvider", true}}},
           {"serverInfo", {{"name", "gradscope"}}}}}});
    return;
  }
  if (!initialized_) return error_response(id, kServerNotInitialized, "initialize first");
  if (shutdown_) return error_response(id, kInvalidRequest, "the server is shut down");
  if (method == "shutdown") {
    shutdown_ = true;
    send_({{"jsonrpc", "2.0"}, {"id", id}, {"result", nullptr}});
  } else if (method == "textDocument/hover") {
    send_({{"jsonrpc", "2.0"}, {"id", id}, {"result", hover(params)}});
  } else {
    error_response(id, kMethodNotFound, "method not found: " + method);
  }
}

void LspServer::notification(const std::string& method, const Json& params) {
  if (method == "exit") {
    exited_ = true;
    return;
  }
  if (!initialized_ || shutdown_) return;  // LSP: notifications before initialize are dropped
  if (method == "initialized") {
    refresh_run();  // a run that cannot be read is said at once, not at the
                    // first file
  } else if (method == "textDocument/didOpen") {
    open_or_change(params, true);
  } else if (method == "textDocument/didChange") {
    open_or_change(params, false);
  } else if (method == "textDocument/didClose") {
    const std::string& uri =
        text_field(field(params, "textDocument", Json::value_t::object, method), "uri", method);
    if (documents_.erase(uri))
      send_({{"jsonrpc", "2.0"},
             {"method", "textDocument/publishDiagnostics"},
             {"params", {{"uri", uri}, {"diagnostics", Json::array()}}}});
  }
  // initialized, $/cancelRequest, didSave and the rest: nothing to do.
}

void LspServer::open_or_change(const Json& params, bool open) {
  const std::string where = open ? "textDocument/didOpen" : "textDocument/didChange";
  const Json& doc = field(params, "textDocument", Json::value_t::object, where);
  const std::string& uri = text_field(doc, "uri", where);
  std::string text;
  SourceLanguage language = SourceLanguage::kPython;
  if (open) {
    text = text_field(doc, "text", where);
    const std::string language_id = doc.contains("languageId") && doc["languageId"].is_string()
                                        ? doc["languageId"].get<std::string>()
                                        : "";
    if (!source_language(language_id, uri, language)) return;  // not a language we read
  } else {
    const auto it = documents_.find(uri);
    if (it == documents_.end()) return;  // not opened, or not a language we read
    language = it->second.language;
    const Json& changes = field(params, "contentChanges", Json::value_t::array, where);
    if (changes.empty()) return;
    // Full sync (capabilities say change 1): the last change holds the whole
    // text.
    text = text_field(changes.back(), "text", where);
  }
  documents_[uri] = Document{language, index_source(text, language)};
  if (!refresh_run()) publish(uri);
}

bool LspServer::refresh_run() {
  if (!run_.refresh()) return false;
  if (!run_.error().empty()) {
    log_ << "gradscope: error: lsp: " << run_.error() << "\n";
    send_({{"jsonrpc", "2.0"},
           {"method", "window/showMessage"},
           {"params", {{"type", 1}, {"message", "gradscope: " + run_.error()}}}});
  }
  for (const auto& [uri, doc] : documents_) publish(uri);
  return true;
}

void LspServer::publish(const std::string& uri) {
  const auto it = documents_.find(uri);
  if (it == documents_.end()) return;
  send_({{"jsonrpc", "2.0"},
         {"method", "textDocument/publishDiagnostics"},
         {"params", {{"uri", uri}, {"diagnostics", diagnostics_json(run_, it->second.defs)}}}});
}

Json LspServer::hover(const Json& params) {
  const std::string where = "textDocument/hover";
  const std::string& uri =
      text_field(field(params, "textDocument", Json::value_t::object, where), "uri", where);
  const Json& pos = field(params, "position", Json::value_t::object, where);
  const int line = int_field(pos, "line", where), character = int_field(pos, "character", where);
  const auto it = documents_.find(uri);
  if (it == documents_.end()) return nullptr;
  const std::optional<std::string> text = hover_markdown(run_, it->second.defs, line, character);
  if (!text) return nullptr;
  return {{"contents", {{"kind", "markdown"}, {"value", *text}}}};
}

}  // namespace gradscope::cli
