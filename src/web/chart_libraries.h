#pragma once
// The chart libraries of the HTML report, compiled into the binary so that `gradscope html`
// writes a page that works offline and needs nothing installed where it is opened.
//
//   #include "chart_libraries.h"
//   html << "<script>" << gradscope::web::vega_js() << "</script>";
//   html << "<!-- " << gradscope::web::versions() << " -->";
//
// Each view is followed in memory by a NUL byte (not part of the view), so data() is also a
// C string.
#include <string_view>

namespace gradscope::web {

/// Minified browser builds of vega, vega-lite and vega-embed (versions pinned in
/// web/package-lock.json).
std::string_view vega_js();
std::string_view vega_lite_js();
std::string_view vega_embed_js();
/// e.g. "vega 5.30.0, vega-lite 5.21.0, vega-embed 6.26.0", read from the packages'
/// package.json at configure time.
std::string_view versions();

}  // namespace gradscope::web
