// Names in a run (nodes, run name, host, command line, paths) are data written by whoever made
// the run. These are the only ways such text leaves gradscope for a terminal, a CSV cell or a
// Mermaid chart, so a name can neither drive the terminal, become a spreadsheet formula nor
// break a chart.
//
//   std::cout << "worst " << gradscope::terminal_text(node) << "\n";   // "a\x1b[2J" -> a\x1b[2J
//   out += gradscope::csv_field(node) + ",";                           // "=1+2" -> "'=1+2"
//   chart += "n0[\"" + gradscope::mermaid_label(node) + "\"]\n";       // "a\"b" -> a#quot;b
#pragma once

#include <string>
#include <string_view>

namespace gradscope {

/// `text` made safe to print on a terminal: \n, \r and \t as those escapes; other C0 controls,
/// DEL and bytes that are not UTF-8 as \xNN; C1 controls and the Unicode bidi controls as
/// \uNNNN. Printable UTF-8 (accents, CJK) is kept as it is.
std::string terminal_text(std::string_view text);

/// A JSON document (as nlohmann's dump writes it, UTF-8) with DEL, the C1 controls and the
/// bidi controls in its strings written as \uNNNN escapes: the same values once parsed, but
/// nothing that drives a terminal when the JSON is printed on one. Such characters can only
/// occur inside strings, so the whole text is scanned.
std::string json_text(std::string_view json);

/// One CSV text cell: a cell that starts with = + - @ TAB or CR gets a leading ' (OWASP CSV
/// injection) and quotes; a cell holding a comma, quote, CR or LF is quoted, quotes doubled
/// (RFC 4180). Numbers are written with csv_number, never through here.
std::string csv_field(std::string_view text);

/// Text for inside a quoted Mermaid label (`id["..."]`): Mermaid's own syntax characters as
/// its entity codes, control characters escaped as by terminal_text, and an empty name shown
/// as "" so the label is never empty.
std::string mermaid_label(std::string_view text);

}  // namespace gradscope
