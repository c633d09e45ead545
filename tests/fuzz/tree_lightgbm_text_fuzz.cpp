// libFuzzer target: the input is LightGBM's text model (parse_lightgbm_text); see tree_fuzz.h for
// what counts as a bug.
#include "tree_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return gradscope::fuzz::fuzz_tree_model(data, size, gradscope::ModelFormat::kLightGBMText);
}
