// libFuzzer target: the input is XGBoost's UBJSON model (parse_xgboost_ubjson, what the live
// tracker reads after every round); see tree_fuzz.h for what counts as a bug.
#include "tree_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return gradscope::fuzz::fuzz_tree_model(data, size, gradscope::ModelFormat::kXGBoostUbjson);
}
