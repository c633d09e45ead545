#include "lsp_transport.h"

#include <cctype>
#include <cstdlib>
#include <vector>

namespace gradscope::cli {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The value of a Content-Length header: digits only (strtoull would take "-1"
// and " 12x").
std::optional<std::size_t> parse_length(const std::string& v) {
  if (v.empty() || v.size() > 19) return std::nullopt;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return static_cast<std::size_t>(std::strtoull(v.c_str(), nullptr, 10));
}

}  // namespace

std::optional<std::string> LspReader::header_line(bool& too_long) {
  std::string line;
  too_long = false;
  for (int c; (c = in_.get()) != std::char_traits<char>::eof();) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    // A peer that never sends a newline must not grow the line without bound:
    // keep reading to the newline (to stay in step) but drop the rest.
    if (line.size() < kMaxHeaderLine)
      line.push_back(static_cast<char>(c));
    else
      too_long = true;
  }
  if (!line.empty()) truncated_ = true;
  return std::nullopt;
}

std::optional<LspFrame> LspReader::next() {
  std::optional<std::size_t> length;
  std::string error;
  bool any_header = false;
  for (;;) {
    bool too_long = false;
    std::optional<std::string> line = header_line(too_long);
    if (!line) {
      if (any_header) truncated_ = true;
      return std::nullopt;
    }
    if (line->empty()) {
      if (!any_header) continue;  // stray blank lines between messages are harmless
      break;
    }
    any_header = true;
    const std::size_t colon = line->find(':');
    if (too_long) {
      if (error.empty())
        error = "header line longer than " + std::to_string(kMaxHeaderLine) + " bytes";
    } else if (colon == std::string::npos) {
      if (error.empty()) error = "header line without ':'";
    } else if (lower(trim(line->substr(0, colon))) == "content-length") {
      length = parse_length(trim(line->substr(colon + 1)));
      if (!length && error.empty()) error = "Content-Length is not a number";
    }
  }
  if (error.empty() && !length) error = "no Content-Length header";
  if (error.empty() && *length > kMaxBody)
    error = "Content-Length " + std::to_string(*length) + " is above the limit of " +
            std::to_string(kMaxBody) + " bytes";
  if (!error.empty()) return LspFrame{"", error};
  LspFrame frame;
  frame.body.resize(*length);
  in_.read(frame.body.data(), static_cast<std::streamsize>(*length));
  if (static_cast<std::size_t>(in_.gcount()) < *length) {
    truncated_ = true;
    return std::nullopt;
  }
  return frame;
}

bool write_lsp_frame(std::ostream& out, const std::string& body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace gradscope::cli
