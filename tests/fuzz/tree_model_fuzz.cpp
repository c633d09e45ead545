// libFuzzer target: the input is any model file, its format detected from the content
// (read_tree_model's path); see tree_fuzz.h for what counts as a bug.
#include "tree_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return gradscope::fuzz::fuzz_tree_model(data, size, gradscope::ModelFormat::kAuto);
}
