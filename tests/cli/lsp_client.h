// A language-server client for the tests: starts `gradscope lsp` with pipes for
// its standard input and output (standard error to a file), frames messages,
// and reads them back with a deadline so a server that hangs fails the test
// instead of wedging it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli_process.h"

namespace gradscope::test {

class LspClient {
 public:
  /// Starts GRADSCOPE_CLI with `args` ("lsp --runs DIR"); stderr goes to
  /// `err_file`.
  LspClient(const std::vector<std::string>& args, const std::filesystem::path& err_file)
      : err_file_(err_file) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(err, 2);
      close(in[1]);
      close(out[0]);
      std::vector<char*> argv{const_cast<char*>(GRADSCOPE_CLI)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(GRADSCOPE_CLI, argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    signal(SIGPIPE,
           SIG_IGN);  // a server that exits early must fail a write, not kill us
  }
  ~LspClient() {
    close_input();
    if (from_ >= 0) close(from_);
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  void send_raw(const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      const ssize_t n = write(to_, bytes.data() + at, bytes.size() - at);
      if (n <= 0) return;
      at += static_cast<std::size_t>(n);
    }
  }
  void send(const nlohmann::json& message) {
    const std::string body = message.dump();
    send_raw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  void request(int id, const std::string& method, const nlohmann::json& params) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }
  void notify(const std::string& method, const nlohmann::json& params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }
  void close_input() {
    if (to_ >= 0) close(to_);
    to_ = -1;
  }
  /// Stops reading the server's output, as a client that went away: its next write fails.
  void close_output() {
    if (from_ >= 0) close(from_);
    from_ = -1;
  }

  /// The next message from the server, or nullopt after `seconds` or at its end
  /// of output.
  std::optional<nlohmann::json> next(double seconds = 10) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const std::size_t header_end = buffer_.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const std::size_t at = buffer_.find("Content-Length: ");
        const std::size_t length = std::stoul(buffer_.substr(at + 16, header_end - at - 16));
        if (buffer_.size() >= header_end + 4 + length) {
          const std::string body = buffer_.substr(header_end + 4, length);
          buffer_.erase(0, header_end + 4 + length);
          return nlohmann::json::parse(body);
        }
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[65536];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  /// The next message with this method (notifications) or id (responses),
  /// skipping others.
  std::optional<nlohmann::json> next_with(const std::string& method, double seconds = 10) {
    while (auto m = next(seconds))
      if (m->value("method", "") == method) return m;
    return std::nullopt;
  }
  std::optional<nlohmann::json> response(int id, double seconds = 10) {
    while (auto m = next(seconds))
      if (m->contains("id") && (*m)["id"] == id && !m->contains("method")) return m;
    return std::nullopt;
  }

  /// The exit code once the server ends within `seconds`; -1 when it did not
  /// exit normally, -2 when it was still running (it is then killed).
  int wait(double seconds = 10) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        waited_ = true;
        return -2;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string err() const { return slurp(err_file_); }

 private:
  std::filesystem::path err_file_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  bool waited_ = false;
  std::string buffer_;
};

}  // namespace gradscope::test
