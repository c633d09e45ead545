// The chart libraries compiled in by .incbin: whole files, the versions web/ pins, and a page
// can inline them as they are.
#include "chart_libraries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace gradscope::web {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// "vega 6.4.0, vega-lite 6.4.3, vega-embed 7.3.0" -> the version of `package`.
std::string version_of(const std::string& package) {
  const std::string all(versions());
  std::smatch m;
  const std::regex re("(^|, )" + package + " ([0-9]+\\.[0-9]+\\.[0-9]+)(,|$)");
  return std::regex_search(all, m, re) ? m[2].str() : "";
}

void expect_umd_library(std::string_view js, const std::string& global) {
  ASSERT_GT(js.size(), 10000u);
  // Rollup's UMD prologue, which makes the library a global for a plain <script>.
  EXPECT_THAT(std::string(js.substr(0, 200)), StartsWith("!function("));
  EXPECT_THAT(std::string(js.substr(0, 400)), HasSubstr("." + global + "="));
  EXPECT_EQ(js.find('\0'), std::string_view::npos);
  EXPECT_EQ(js.data()[js.size()], '\0');  // the promised terminator after the view
  // A page inlines the file in <script>...</script>: a closing tag inside would end it early.
  EXPECT_EQ(js.find("</script"), std::string_view::npos);
}

TEST(ChartLibraries, AreTheUmdBuilds) {
  expect_umd_library(vega_js(), "vega");
  expect_umd_library(vega_lite_js(), "vegaLite");
  expect_umd_library(vega_embed_js(), "vegaEmbed");
}

TEST(ChartLibraries, EmbedTheVersionsTheyReport) {
  EXPECT_THAT(std::string(versions()),
              ::testing::MatchesRegex("vega [0-9.]+, vega-lite [0-9.]+, vega-embed [0-9.]+"));
  for (const char* package : {"vega", "vega-lite", "vega-embed"}) {
    SCOPED_TRACE(package);
    const std::string quoted = "\"" + version_of(package) + "\"";
    ASSERT_NE(quoted, "\"\"");
    const std::string_view js = std::string(package) == "vega"        ? vega_js()
                                : std::string(package) == "vega-lite" ? vega_lite_js()
                                                                      : vega_embed_js();
    EXPECT_THAT(std::string(js), HasSubstr(quoted));
  }
}

}  // namespace
}  // namespace gradscope::web
