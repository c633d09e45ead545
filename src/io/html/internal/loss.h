// The HTML report's loss section: the loss per step with its spikes and divergence marked, and
// the global gradient norm before and after clipping (core/series; docs/spikes.md).
#pragma once

#include <string>
#include <vector>

#include "gradscope/io/html/report.h"

namespace gradscope::internal {

/// loss (the loss per step; LOSS_SPIKE points and the DIVERGENCE onset from the report, which
/// stay marked where the drawn series was thinned; log y when every loss is > 0) and grad-norm
/// (before clipping and, where recorded, after; log y; dashed: the median before clipping). A
/// chart without data is left out. With `beside`, its loss and norms are drawn as lines of
/// their own, every line then labelled with its run (`name` for this one).
/// Whether the page has a Loss section: the run, or the run beside it, recorded scalars.
inline bool has_loss_section(const HtmlReportInput& in) {
  return (in.scalars && !in.scalars->empty()) || (in.beside && in.beside->scalars && !in.beside->scalars->empty());
}

std::vector<Chart> loss_charts(const std::vector<StepScalar>& values, const Report& report,
                               const BesideRun* beside = nullptr, const std::string& name = {});

}  // namespace gradscope::internal
