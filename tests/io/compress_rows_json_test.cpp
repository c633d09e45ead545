// rows.json and row recipes as JSON: exact round trips (the CLI's recipe must equal the one made
// in memory), and damaged files refused with the field named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "../common/error_of.h"
#include "gradscope/io/compress/rows_json.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;
using test::error_of;

compress::RowProfile table() {
  compress::RowProfile t;
  t.table = "user";
  t.rows = 3;
  t.dim = 2;
  t.lookups = {7, 0, 1.0 / 3};
  t.exposed = {1, 0, 1};
  t.max_abs = {0.1, std::nextafter(0.2, 1.0), 1e-300};
  t.sum_sq = {0.01, 0.05, 2.0 / 7};
  t.fallback_sq = {0.5, 0.25, 0.125};
  t.fallback = {-0.1, 1.0 / 7};
  return t;
}

TEST(RowProfilesJson, RoundTripsEveryValueExactly) {
  const auto back = parse_row_profiles_json(render_row_profiles_json({table()}), "rows.json");
  ASSERT_EQ(back.size(), 1u);
  const compress::RowProfile& b = back[0];
  const compress::RowProfile t = table();
  EXPECT_EQ(b.table, "user");
  EXPECT_EQ(b.lookups, t.lookups);
  EXPECT_EQ(b.exposed, t.exposed);
  EXPECT_EQ(b.max_abs, t.max_abs);
  EXPECT_EQ(b.sum_sq, t.sum_sq);
  EXPECT_EQ(b.fallback_sq, t.fallback_sq);
  EXPECT_EQ(b.fallback, t.fallback);
  // So the rule decides alike on both.
  const compress::RowRecipe a = compress::make_row_recipe(t, 20), c = compress::make_row_recipe(b, 20);
  EXPECT_EQ(a.level, c.level);
  EXPECT_EQ(render_row_recipes_json({a}), render_row_recipes_json({c}));
}

TEST(RowProfilesJson, RefusesDamage) {
  std::string text = render_row_profiles_json({table()});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_THAT(error_of([&] { parse_row_profiles_json(with("\"exposed\":[1,0,1]", "\"exposed\":[1,2,1]"), "r.json"); }),
              HasSubstr("r.json: gradscope_compression_rows.tables[0].exposed[1]: is not 0 or 1"));
  EXPECT_THAT(error_of([&] { parse_row_profiles_json(with("\"lookups\":[7.0,", "\"lookups\":[-7.0,"), "r.json"); }),
              HasSubstr("lookups[0]"));
  EXPECT_THAT(error_of([&] { parse_row_profiles_json(with("\"rows\":3", "\"rows\":4"), "r.json"); }),
              HasSubstr("per-row statistics do not have 4 values"));
  EXPECT_THAT(error_of([&] { parse_row_profiles_json(render_row_profiles_json({table(), table()}), "r.json"); }),
              HasSubstr("table 'user' appears twice"));
  EXPECT_THAT(error_of([&] { parse_row_profiles_json("{", "r.json"); }), HasSubstr("r.json: not JSON"));
}

TEST(RowRecipesJson, RoundTripsAndRecomputesSizes) {
  const compress::RowRecipe r = compress::make_row_recipe(table(), 20);
  std::string text = render_row_recipes_json({r});
  const auto back = parse_row_recipes_json(text, "x.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].level, r.level);
  EXPECT_EQ(back[0].bytes, r.bytes);
  EXPECT_EQ(back[0].fp32_bytes, r.fp32_bytes);
  EXPECT_EQ(back[0].fallback, r.fallback);
  const std::string lie = text.replace(text.find("\"bytes\": " + std::to_string(r.bytes)),
                                       std::string("\"bytes\": " + std::to_string(r.bytes)).size(), "\"bytes\": 1");
  EXPECT_EQ(parse_row_recipes_json(lie, "x.json")[0].bytes, r.bytes);  // computed, not read
  std::string bad = render_row_recipes_json({r});
  bad.replace(bad.find("\"pruned\""), 8, "\"int5\"");
  EXPECT_THAT(error_of([&] { parse_row_recipes_json(bad, "x.json"); }),
              HasSubstr("'int5' is not fp32, fp16, int8, int4, int3, int2, pruned or merged"));
  // A table decided twice would be applied twice.
  EXPECT_THAT(error_of([&] { parse_row_recipes_json(render_row_recipes_json({r, r}), "x.json"); }),
              HasSubstr("tables[1].table: table 'user' appears twice (a table is decided once)"));
}

}  // namespace
}  // namespace gradscope
