// libFuzzer target: the input is one of the compression documents, its first byte choosing
// which: a run's units.json (the rule's profile), a recipe, a run's rows.json (the tables' row
// profiles) or a row recipe; the rest is the document, parsed as `gradscope compress` and the
// recipes' readers parse it. A profile that parses is then planned as `gradscope compress`
// plans it (the rule at uniform INT8's size, and the smallest size it reaches), a row profile
// gets its row recipe at half its FP32 size, and a recipe is written back: a document that
// checks out but cannot be planned or written safely shows as a crash. A gradscope::Error is
// an answer; anything else (a crash, a sanitizer report, another exception, an input over its
// time budget, unbounded memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "gradscope/core/compress/rows.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/core/error.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/rows_json.h"

namespace {

volatile std::size_t g_sink = 0;

void plan(const std::vector<gradscope::compress::NodeProfile>& nodes) {
  using namespace gradscope::compress;
  const Recipe int8 = uniform_recipe(nodes, Precision::kInt8);
  g_sink = g_sink + static_cast<std::size_t>(smallest_bytes(nodes));
  g_sink = g_sink + gradscope::render_recipe_json(make_recipe(nodes, Budget::bytes(int8.bytes))).size();
}

void plan_rows(const std::vector<gradscope::compress::RowProfile>& tables) {
  using namespace gradscope::compress;
  std::vector<RowRecipe> recipes;
  for (const RowProfile& t : tables) {
    const RowRecipe fp32 = uniform_row_recipe(t, kRowFp32);
    recipes.push_back(make_row_recipe(t, fp32.bytes / 2));
  }
  g_sink = g_sink + gradscope::render_row_recipes_json(recipes).size();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gradscope::fuzz::silence_standard_streams();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace gradscope;
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::within_budget(size, [&] {
    try {
      switch (data[0] % 4) {
        case 0:
          plan(parse_compress_profile_json(text, "units.json"));
          break;
        case 1:
          g_sink = g_sink + render_recipe_json(parse_recipe_json(text, "recipe.json")).size();
          break;
        case 2:
          plan_rows(parse_row_profiles_json(text, "rows.json"));
          break;
        default:
          g_sink = g_sink + render_row_recipes_json(parse_row_recipes_json(text, "row-recipe.json")).size();
          break;
      }
    } catch (const Error&) {
    }
  });
  return 0;
}
