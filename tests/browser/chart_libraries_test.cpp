// The chart bundle compiled in by .incbin: the whole file, the versions it reports, and a page
// can inline it as it is.
#include "chart_libraries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace gradscope::web {
namespace {

using ::testing::HasSubstr;

// "vega 6.4.0, vega-lite 6.4.3, vega-embed 7.3.0" -> the version of `package`.
std::string version_of(const std::string& package) {
  const std::string all(versions());
  std::smatch m;
  const std::regex re("(^|, )" + package + " ([0-9]+\\.[0-9]+\\.[0-9]+)(,|$)");
  return std::regex_search(all, m, re) ? m[2].str() : "";
}

TEST(ChartLibraries, IsOneScriptThatSetsTheThreeGlobals) {
  const std::string_view js = chart_bundle_js();
  ASSERT_GT(js.size(), 100000u);  // vl-convert's bundle is about 900 KB
  for (const char* global : {"window.vega=", "window.vegaLite=", "window.vegaEmbed="}) {
    SCOPED_TRACE(global);
    EXPECT_NE(js.find(global), std::string_view::npos);
  }
  EXPECT_EQ(js.find('\0'), std::string_view::npos);
  EXPECT_EQ(js.data()[js.size()], '\0');  // the promised terminator after the view
  // A page inlines the file in <script>...</script>: a closing tag inside would end it early.
  EXPECT_EQ(js.find("</script"), std::string_view::npos);
}

TEST(ChartLibraries, EmbedTheVersionsTheyReport) {
  EXPECT_THAT(std::string(versions()),
              ::testing::MatchesRegex("vega [0-9.]+, vega-lite [0-9.]+, vega-embed [0-9.]+"));
  // vega and vega-lite keep their version strings in the bundle (vega-embed's is not kept;
  // the browser test reads window.vegaEmbed.version instead).
  for (const char* package : {"vega", "vega-lite"}) {
    SCOPED_TRACE(package);
    const std::string quoted = "\"" + version_of(package) + "\"";
    ASSERT_NE(quoted, "\"\"");
    EXPECT_THAT(std::string(chart_bundle_js()), HasSubstr(quoted));
  }
  EXPECT_NE(version_of("vega-embed"), "");
}

}  // namespace
}  // namespace gradscope::web
