#pragma once
// The chart libraries of the HTML report, compiled into the binary so that `gradscope html`
// writes a page that works offline and needs nothing installed where it is opened.
//
//   #include "chart_libraries.h"
//   html << "<script>" << gradscope::web::chart_bundle_js() << "</script>";
//   html << "<!-- " << gradscope::web::versions() << " -->";
//
// The view is followed in memory by a NUL byte (not part of the view), so data() is also a
// C string.
#include <string_view>

namespace gradscope::web {

/// Vega, Vega-Lite and vega-embed in one minified browser script that sets window.vega,
/// window.vegaLite and window.vegaEmbed (vl-convert-python's bundle, pinned in requirements.txt).
std::string_view chart_bundle_js();
/// e.g. "vega 6.2.0, vega-lite 6.4.1, vega-embed 7.0.2", as scripts/chart_bundle.py read them
/// at configure time.
std::string_view versions();

}  // namespace gradscope::web
