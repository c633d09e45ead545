// The three sanitisers: terminal text, CSV cells and Mermaid labels, on hostile input.
#include "gradscope/io/render/safe_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace gradscope {
namespace {

TEST(TerminalText, KeepsPrintableAsciiAndUtf8) {
  EXPECT_EQ(terminal_text("fc1.weight"), "fc1.weight");
  EXPECT_EQ(terminal_text("café/层 → ü"), "café/层 → ü");
  EXPECT_EQ(terminal_text("emoji \xf0\x9f\x98\x80"), "emoji \xf0\x9f\x98\x80");  // U+1F600
  EXPECT_EQ(terminal_text(""), "");
  EXPECT_EQ(terminal_text("back\\slash ~"), "back\\slash ~");
}

TEST(TerminalText, EscapesC0ControlsAndDel) {
  EXPECT_EQ(terminal_text("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(terminal_text("red\x1b[31m"), "red\\x1b[31m");
  EXPECT_EQ(terminal_text("bell\x07"), "bell\\x07");
  EXPECT_EQ(terminal_text(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(terminal_text("\x1f\x7f"), "\\x1f\\x7f");
}

TEST(TerminalText, EscapesC1ControlsEncodedAndRaw) {
  EXPECT_EQ(terminal_text("csi\xc2\x9b"
                          "2J"),
            "csi\\u009b2J");  // U+009B as UTF-8
  EXPECT_EQ(terminal_text("\xc2\x80\xc2\x9f\xc2\xa0"), "\\u0080\\u009f\xc2\xa0");  // U+00A0 prints
  EXPECT_EQ(terminal_text("csi\x9b"
                          "2J"),
            "csi\\x9b2J");  // a raw 0x9b is CSI on 8-bit terminals
  EXPECT_EQ(terminal_text("\x85\x90"), "\\x85\\x90");
}

TEST(TerminalText, EscapesBidiControls) {
  EXPECT_EQ(terminal_text("a\u202e"
                          "cba"),
            "a\\u202ecba");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(terminal_text("\u202a\u202b\u202c\u202d"), "\\u202a\\u202b\\u202c\\u202d");
  EXPECT_EQ(terminal_text("\u2066\u2067\u2068\u2069"), "\\u2066\\u2067\\u2068\\u2069");
  EXPECT_EQ(terminal_text("\u200e\u200f\u061c"), "\\u200e\\u200f\\u061c");
  EXPECT_EQ(terminal_text("\u2065\u206a\u2029"),
            "\u2065\u206a\u2029");  // neighbours are not bidi controls
}

TEST(TerminalText, ShowsInvalidUtf8ByteByByte) {
  EXPECT_EQ(terminal_text("\xff"), "\\xff");
  EXPECT_EQ(terminal_text("ab\xc3"), "ab\\xc3");                // truncated at the end
  EXPECT_EQ(terminal_text("\xc3(x"), "\\xc3(x");                // lead byte without continuation
  EXPECT_EQ(terminal_text("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(terminal_text("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // overlong, 3 bytes
  EXPECT_EQ(terminal_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // UTF-16 surrogate D800
  EXPECT_EQ(terminal_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(terminal_text("\xe2\x80"), "\\xe2\\x80");  // truncated 3-byte sequence
  EXPECT_EQ(terminal_text("\xe2\x80\xaeok"), "\\u202eok");
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("fc1.weight"), "fc1.weight");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("x\ry"), "\"x\ry\"");
  EXPECT_EQ(csv_field("x\ny"), "\"x\ny\"");
  EXPECT_EQ(csv_field(""), "");
}

TEST(CsvField, NeutralisesFormulaPrefixes) {
  EXPECT_EQ(csv_field("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
  EXPECT_EQ(csv_field("+1+1"), "\"'+1+1\"");
  EXPECT_EQ(csv_field("-2+3"), "\"'-2+3\"");
  EXPECT_EQ(csv_field("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(csv_field("\t=1"), "\"'\t=1\"");
  EXPECT_EQ(csv_field("\r=1"), "\"'\r=1\"");
  EXPECT_EQ(csv_field("=\"x\",1"), "\"'=\"\"x\"\",1\"");
  // Only the first character matters; a formula character elsewhere is plain text.
  EXPECT_EQ(csv_field("a=b-c"), "a=b-c");
  EXPECT_EQ(csv_field("'quoted"), "'quoted");
}

TEST(MermaidLabel, EscapesItsSyntaxAsEntityCodes) {
  EXPECT_EQ(mermaid_label("encoder.0"), "encoder.0");
  EXPECT_EQ(mermaid_label("a\"]; click x \"<b>"), "a#quot;]; click x #quot;#lt;b#gt;");
  EXPECT_EQ(mermaid_label("#lt;&amp;"), "#35;lt;#amp;amp;");
  EXPECT_EQ(mermaid_label("`**md**`"), "#96;**md**#96;");
  // Mermaid turns its own placeholders ﬂ° and ¶ß back into & and ;, so they are escaped too.
  EXPECT_EQ(mermaid_label("ﬂ°lt¶ß"), "#64258;°lt#182;ß");
}

TEST(MermaidLabel, ShowsEmptyAndControlCharactersVisibly) {
  EXPECT_EQ(mermaid_label(""), "#quot;#quot;");
  EXPECT_EQ(mermaid_label("a\nb\x1b[2J\xc2\x9b"), "a\\nb\\x1b[2J\\u009b");
  EXPECT_EQ(mermaid_label("café"), "café");
}

TEST(JsonText, EscapesTerminalControlsInsideStringsAndKeepsTheValue) {
  const std::string name = std::string("a\x7f") + "\xc2\x9b" + "2J" + "\xe2\x80\xae" + "caf\xc3\xa9";
  const std::string dumped = nlohmann::json{{"node", name}}.dump();
  const std::string safe = json_text(dumped);
  EXPECT_EQ(safe, "{\"node\":\"a\\u007f\\u009b2J\\u202ecaf\xc3\xa9\"}");
  EXPECT_EQ(nlohmann::json::parse(safe).at("node"), name);
  EXPECT_EQ(json_text("{\"plain\": [1, -2.5e3, null]}"), "{\"plain\": [1, -2.5e3, null]}");
}

}  // namespace
}  // namespace gradscope
