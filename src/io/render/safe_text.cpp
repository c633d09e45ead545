#include "gradscope/io/render/safe_text.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

namespace gradscope {
namespace {

// Length of the well-formed UTF-8 sequence at text[i] and its code point, or 0 when the bytes
// there are not one (Unicode 15, table 3-7: no overlongs, no surrogates, nothing past U+10FFFF).
std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    cp = b0 & 0x0f;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    cp = b0 & 0x07;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char b = byte(i + k);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  return n;
}

// C1 controls, and the characters with the Unicode Bidi_Control property (they reorder what
// follows them on screen: the "Trojan Source" attack, CVE-2021-42574).
bool hidden_control(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string hex_escape(const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Mermaid's syntax inside a quoted label, as its entity codes ("#quot;", or "#35;" by number).
constexpr std::pair<std::string_view, std::string_view> kMermaidEntities[] = {
    {"\"", "#quot;"}, {"<", "#lt;"}, {">", "#gt;"}, {"&", "#amp;"},
    {"#", "#35;"},  // would start an entity code
    {"`", "#96;"},  // "`...`" makes a Markdown label
    // Mermaid stores entity codes as the placeholders "ﬂ°" and "¶ß" and turns them back into
    // '&' and ';' (encodeEntities / decodeEntities): a name holding them must not forge one.
    {"ﬂ", "#64258;"}, {"¶", "#182;"}};

}  // namespace

std::string json_text(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size();) {
    char32_t cp = 0;
    const std::size_t n = static_cast<unsigned char>(json[i]) >= 0x80 ? utf8_sequence(json, i, cp) : 0;
    if (json[i] == 0x7f) {
      out += "\\u007f";
      ++i;
    } else if (n > 0 && hidden_control(cp)) {
      out += hex_escape("\\u%04x", static_cast<unsigned>(cp));
      i += n;
    } else {
      out += json[i++];
    }
  }
  return out;
}

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (c < 0x80) {  // the other C0 controls and DEL
      out += hex_escape("\\x%02x", c);
      ++i;
    } else {
      char32_t cp = 0;
      const std::size_t n = utf8_sequence(text, i, cp);
      if (n == 0) {  // shown byte by byte: a lone 0x9b is CSI on an 8-bit terminal
        out += hex_escape("\\x%02x", c);
        ++i;
      } else {
        if (hidden_control(cp)) out += hex_escape("\\u%04x", static_cast<unsigned>(cp));
        else out.append(text.substr(i, n));
        i += n;
      }
    }
  }
  return out;
}

std::string csv_field(std::string_view text) {
  // OWASP, CSV Injection: a cell a spreadsheet would evaluate starts with one of these.
  const bool formula =
      !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos;
  if (!formula && text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = formula ? "\"'" : "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string mermaid_label(std::string_view text) {
  if (text.empty()) return "#quot;#quot;";
  const std::string shown = terminal_text(text);
  std::string out;
  for (std::size_t i = 0; i < shown.size();) {
    const auto entity =
        std::find_if(std::begin(kMermaidEntities), std::end(kMermaidEntities),
                     [&](const auto& e) { return shown.compare(i, e.first.size(), e.first) == 0; });
    if (entity == std::end(kMermaidEntities)) {
      out += shown[i++];
    } else {
      out += entity->second;
      i += entity->first.size();
    }
  }
  return out;
}

}  // namespace gradscope
