// Exports of a timeline and of raw records, for scripts and other tools.
//
//   std::ofstream("frames.json") << gradscope::render_frames_json(timeline);
//   std::ofstream("frames.csv") << gradscope::render_frames_csv(timeline);
//   for (const auto& r : records) std::cout << gradscope::record_jsonl(r);
//
// Formats (non-finite numbers are null in JSON and empty fields in CSV):
//   JSON frames  [{"step", "layers": [{"name", "mean_abs_grad", "max_abs_grad", "grad_norm",
//                 "is_vanishing", "is_exploding", "flow_intensity"}]}], one frame a line
//   CSV          step,layer,mean_abs_grad,max_abs_grad,grad_norm,is_vanishing,is_exploding
//                (flags 0/1, names quoted per RFC 4180)
//   JSONL        one record a line: step, node, site and every Stats field
#pragma once

#include <string>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/timeline.h"

namespace gradscope {

/// The frames as a JSON array, one frame per line.
std::string render_frames_json(const Timeline& timeline);

/// Header and one row per node per frame.
std::string render_frames_csv(const Timeline& timeline);

/// One record as one JSON line, newline included.
std::string record_jsonl(const Record& record);

}  // namespace gradscope
