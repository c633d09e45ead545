// The Language Server Protocol's framing over a byte stream: "Content-Length:
// N\r\n\r\n" and N bytes of JSON. Reading never trusts the peer: header lines
// and bodies have size limits, and a damaged header block is reported and
// skipped, so garbage cannot crash or wedge the server.
//
//   gradscope::cli::LspReader in(std::cin);
//   while (auto m = in.next()) handle(m->body);   // m->error: a framing
//   problem to answer
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <ostream>
#include <string>

namespace gradscope::cli {

/// One framed message, or a header block that could not be framed (`error` set,
/// no body).
struct LspFrame {
  std::string body;
  std::string error;
};

/// Reads framed messages. next() returns nullopt at the end of input;
/// truncated() then says whether the input ended inside a message (headers or
/// body), which the caller reports.
class LspReader {
 public:
  /// Bodies above this are refused: no editor sends a 64 MiB document, and a
  /// bad length must not make the server allocate whatever number the peer
  /// wrote.
  static constexpr std::size_t kMaxBody = std::size_t{64} << 20;
  static constexpr std::size_t kMaxHeaderLine = 8192;

  explicit LspReader(std::istream& in) : in_(in) {}
  std::optional<LspFrame> next();
  bool truncated() const { return truncated_; }

 private:
  // One header line without its "\r\n"; nullopt at the end of input.
  std::optional<std::string> header_line(bool& too_long);

  std::istream& in_;
  bool truncated_ = false;
};

/// Writes `body` framed with its Content-Length and flushes; false when the
/// write failed.
bool write_lsp_frame(std::ostream& out, const std::string& body);

}  // namespace gradscope::cli
