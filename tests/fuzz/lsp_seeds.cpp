#include <string>

#include <nlohmann/json.hpp>

#include "seeds.h"

namespace gradscope::fuzz {
namespace {

using Json = nlohmann::json;

std::string frame(const Json& message) {
  const std::string body = message.dump();
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string request(int id, const std::string& method, const Json& params) {
  return frame({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
}

std::string notify(const std::string& method, const Json& params) {
  return frame({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

// Sources that define the sample run's nodes (sample_runs.h: encoder/fc1, encoder/relu, ...).
constexpr const char* kPython =
    "import torch.nn as nn\n\n"
    "class Encoder(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc1 = nn.Linear(8, 16)\n"
    "        self.relu = nn.ReLU()\n"
    "        self.fc2 = nn.Linear(16, 4)\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = Encoder()\n"
    "        self.add_module(\"head\", nn.Tanh())\n";
constexpr const char* kCpp =
    "struct EncoderImpl : torch::nn::Module {\n"
    "  EncoderImpl() {\n"
    "    fc1 = register_module(\"fc1\", torch::nn::Linear(8, 16));\n"
    "    relu = register_module(\"relu\", torch::nn::ReLU());\n"
    "  }\n"
    "  torch::nn::Linear fc1{nullptr};\n"
    "  torch::nn::ReLU relu{nullptr};\n"
    "};\n";

std::string session(const std::string& uri, const std::string& language, const std::string& text) {
  const Json doc = {{"uri", uri}};
  return request(1, "initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", Json::object()}}) +
         notify("initialized", Json::object()) +
         notify("textDocument/didOpen",
                {{"textDocument", {{"uri", uri}, {"languageId", language}, {"version", 1}, {"text", text}}}}) +
         request(2, "textDocument/hover", {{"textDocument", doc}, {"position", {{"line", 5}, {"character", 14}}}}) +
         notify("textDocument/didChange",
                {{"textDocument", {{"uri", uri}, {"version", 2}}}, {"contentChanges", {{{"text", text + "\n"}}}}}) +
         request(3, "textDocument/hover", {{"textDocument", doc}, {"position", {{"line", 2}, {"character", 4}}}}) +
         notify("textDocument/didClose", {{"textDocument", doc}}) + request(4, "shutdown", nullptr) +
         notify("exit", nullptr);
}

}  // namespace

void write_lsp_seeds(const std::filesystem::path& out) {
  const std::filesystem::path dir = out / "lsp_transport";
  const std::string python = session("file:///work/model.py", "python", kPython);
  write_seed(dir, "python-session", python);
  write_seed(dir, "cpp-session", session("file:///work/model.cpp", "cpp", kCpp));
  write_seed(dir, "cut-short", python.substr(0, python.size() / 2));
  write_seed(dir, "no-length", "Content-Type: application/vscode-jsonrpc\r\n\r\n{}");
  write_seed(dir, "huge-length", "Content-Length: 99999999999999999999\r\n\r\n{}");
  write_seed(dir, "not-json", "Content-Length: 5\r\n\r\n{{{{{" + request(9, "shutdown", nullptr));
  write_seed(dir, "before-initialize", request(1, "textDocument/hover", Json::object()) + notify("exit", nullptr));
}

}  // namespace gradscope::fuzz
