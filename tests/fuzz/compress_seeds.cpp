#include <cmath>
#include <string>
#include <vector>

#include "../common/compress_fixture.h"
#include "gradscope/core/compress/rows.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/rows_json.h"
#include "seeds.h"

namespace gradscope::fuzz {
namespace {

// The first byte chooses the reader (compress_inputs_fuzz.cpp): 0 units.json, 1 a recipe,
// 2 rows.json, 3 a row recipe.
std::string as(char kind, const std::string& document) { return std::string(1, kind) + document; }

std::vector<compress::NodeProfile> profiles() {
  std::vector<compress::NodeProfile> p = test::linear_chain(6, 4, 3);
  p[0].max_abs = {1, 2, 3, 4};
  p[0].weight_sq = {1, 0.5, 2, 1};
  p[0].act_sq = {0.5, 0.25, 0, 1};
  p[0].out_grad_sq = {1, 0.1, 1, 2};
  p[0].zero_frac = {0, 0, 1, 0};
  p[1].max_abs = {1, 1, 0.5};
  p[1].weight_sq = {2, 2, 1};
  for (compress::NodeProfile& n : p) {
    n.batch = 8;
    n.grad_sq = 0.01;
    n.param_elements = n.units() * n.unit_elements() + n.bias;
    n.update_ratio = 0.001;
    n.steps = 100;
  }
  return p;
}

compress::RowProfile table(const std::string& name, int64_t rows, int64_t dim) {
  compress::RowProfile t;
  t.table = name;
  t.rows = rows;
  t.dim = dim;
  for (int64_t r = 0; r < rows; ++r) {
    t.lookups.push_back(static_cast<double>((r * 7) % 5));
    t.exposed.push_back(r % 4 == 3 ? 0 : 1);
    t.max_abs.push_back(0.1 * static_cast<double>(r + 1));
    t.sum_sq.push_back(0.01 * static_cast<double>(r + 1));
    t.fallback_sq.push_back(0.001 * static_cast<double>(r));
  }
  t.fallback.assign(static_cast<std::size_t>(dim), 0.05);
  return t;
}

}  // namespace

void write_compress_seeds(const std::filesystem::path& out) {
  const std::filesystem::path dir = out / "compress_inputs";
  const std::vector<compress::NodeProfile> nodes = profiles();
  write_seed(dir, "units", as(0, render_compress_profile_json(nodes)));
  write_seed(dir, "units-no-statistics", as(0, render_compress_profile_json({test::linear_node("fc", 3, 2)})));
  const compress::Recipe int8 = compress::uniform_recipe(nodes, compress::Precision::kInt8);
  write_seed(dir, "recipe-rule", as(1, render_recipe_json(compress::make_recipe(nodes, compress::Budget::bytes(int8.bytes)))));
  write_seed(dir, "recipe-int4", as(1, render_recipe_json(compress::uniform_recipe(nodes, compress::Precision::kInt4))));
  const std::vector<compress::RowProfile> tables = {table("user", 12, 4), table("item", 5, 3)};
  write_seed(dir, "rows", as(2, render_row_profiles_json(tables)));
  std::vector<compress::RowRecipe> recipes;
  for (const compress::RowProfile& t : tables)
    recipes.push_back(compress::make_row_recipe(t, compress::uniform_row_recipe(t, compress::kRowFp32).bytes / 2));
  write_seed(dir, "row-recipes", as(3, render_row_recipes_json(recipes)));
  write_seed(dir, "not-json", as(0, "{\"gradscope_compression_profile\": {\"version\": 1, \"nodes\": [{"));
}

}  // namespace gradscope::fuzz
