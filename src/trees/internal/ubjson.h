// Parsing XGBoost's UBJSON models (save_model("m.ubj"), XGBoosterSaveModelToBuffer with
// format "ubj"): the same document as its JSON model, with float32 values in binary, which
// XGBoost writes and nlohmann reads several times faster than text.
#pragma once

#include <string>
#include <vector>

#include "internal/model_json.h"

namespace gradscope::trees_internal {

/// `bytes` parsed as UBJSON, refusing nesting deeper than `max_depth`, objects of more than
/// 100000 members and more values than the input has bytes (a typed array of no-data
/// elements and a count of 2^62 would otherwise run for ever). Errors: "byte N: malformed
/// UBJSON: ..." or "malformed: ...". Building and freeing a value per element is most of
/// the cost of a parse: members whose key is in `skip` (at any depth) are read but left out,
/// and arrays of numbers whose key is in `pack` become one packed value (packed_numbers.h;
/// an array that holds anything else stays an array).
Json parse_ubjson(const std::string& bytes, int max_depth,
                  const std::vector<std::string>& skip = {},
                  const std::vector<std::string>& pack = {});

}  // namespace gradscope::trees_internal
