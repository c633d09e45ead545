// The embedding.json seeds. Real summaries come from the core's own rules over embedding rows
// trained the way the tracker feeds them (popular rows exposed often, a few rows whose
// updates flip sign every step: zombies, many rows never exposed), saved by
// save_embedding_summary. The hand-made ones are what a text editor or another tool could
// leave: wrong types, sizes that disagree, missing keys, other versions, deep nesting.
#include <cmath>
#include <string>
#include <vector>

#include "gradscope/core/embedding/math.h"
#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/embedding/rows.h"
#include "gradscope/io/embedding/store.h"
#include "nlohmann/json.hpp"
#include "seeds.h"

namespace gradscope::fuzz {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct Table {
  std::string layer;
  int64_t rows, dim, steps;
};

// One table trained for `steps` steps; its per-step gradient norms in `norms`.
EmbeddingTableSummary train(const Table& t, std::vector<double>& norms) {
  EmbeddingRows rows(t.rows, t.dim);
  std::vector<float> grad(static_cast<std::size_t>(t.dim)), delta(grad.size());
  for (int64_t step = 0; step < t.steps; ++step) {
    double norm_sq = 0;
    for (int64_t r = 0; r < t.rows / 2; ++r) {  // the upper half is never exposed: dead rows
      if ((step + 1) % (r + 1) != 0 && r > 3) continue;  // row r seen every (r + 1)th step
      rows.expose(r, step);
      const bool zombie = r < 3;
      for (int64_t d = 0; d < t.dim; ++d) {
        grad[d] = static_cast<float>(0.01 * std::sin(0.7 * static_cast<double>(step + d + r)));
        const double sign = zombie && step % 2 ? -1.0 : 1.0;
        delta[d] = static_cast<float>(sign * (zombie ? 0.5 : 0.001) * (1 + d % 3));
      }
      norm_sq += rows.record_gradients(&r, 1, grad.data());
      rows.record_update(r, delta.data(), 1.0);
    }
    norms.push_back(std::sqrt(norm_sq));
  }
  EmbeddingRuleOptions options;
  const std::vector<double> singular = {9.0, 0.5, 0.01, 0.001};  // nearly rank one: collapse
  EmbeddingTableSummary s{diagnose_embedding(t.layer, rows, t.steps, options, singular, 16),
                          profile_embedding(t.layer, rows)};
  return s;
}

EmbeddingRunSummary summary(const std::vector<Table>& tables) {
  EmbeddingRunSummary out;
  std::vector<std::vector<double>> norms(tables.size());
  for (std::size_t i = 0; i < tables.size(); ++i) out.tables.push_back(train(tables[i], norms[i]));
  for (std::size_t i = 0; i < tables.size(); ++i)
    for (std::size_t j = i + 1; j < tables.size(); ++j)
      out.correlations.push_back({tables[i].layer, tables[j].layer, pearson(norms[i], norms[j]),
                                  static_cast<int64_t>(norms[i].size())});
  return out;
}

std::string saved(const fs::path& work, const EmbeddingRunSummary& s) {
  save_embedding_summary(work.string(), s);
  return read_bytes(work / "embedding.json");
}

}  // namespace

void write_embedding_seeds(const fs::path& out, const fs::path& work) {
  const fs::path dir = out / "embedding_json";
  const fs::path scratch = work / "embedding";
  write_seed(dir, "user_and_item",
             saved(scratch, summary({{"user", 40, 8, 30}, {"item", 64, 8, 30}})));
  write_seed(dir, "hostile_layer_names",
             saved(scratch, summary({{"</script><b onmouseover=alert(1)>\"u\"", 12, 4, 8},
                                     {"line\xE2\x80\xA8sep \xE5\xB1\x82 & 'q'", 10, 2, 8},
                                     {std::string(300, 'L'), 6, 2, 3}})));
  write_seed(dir, "one_row_one_step", saved(scratch, summary({{"tiny", 1, 1, 1}})));
  write_seed(dir, "never_trained", saved(scratch, summary({{"cold", 20, 4, 0}})));
  write_seed(dir, "no_tables", saved(scratch, EmbeddingRunSummary{}));

  // Hand-made.
  const Json real = Json::parse(saved(scratch, summary({{"item", 16, 4, 6}})));
  const std::string table = "/gradscope_embedding_run/tables/0";
  // The real file with the value at `pointer` replaced by the JSON text `value`.
  const auto with = [&](const std::string& pointer, const std::string& value) {
    Json j = real;
    j[Json::json_pointer(pointer)] = "@@";
    std::string text = j.dump(2);
    return text.replace(text.find("\"@@\""), 4, value);
  };
  write_seed(dir, "empty_file", "");
  write_seed(dir, "not_json", "embedding tables: item\n");
  write_seed(dir, "null", "null");
  write_seed(dir, "array", "[]");
  write_seed(dir, "empty_object", "{}");
  write_seed(dir, "no_body_keys", "{\"gradscope_embedding_run\": {}}");
  write_seed(dir, "newer_version", with("/gradscope_embedding_run/version", "2"));
  write_seed(dir, "version_is_text", with("/gradscope_embedding_run/version", "\"1\""));
  write_seed(dir, "version_huge", with("/gradscope_embedding_run/version", "1e300"));
  write_seed(dir, "version_negative", with("/gradscope_embedding_run/version", "-1"));
  write_seed(dir, "table_empty_object", with(table, "{}"));
  write_seed(dir, "tables_is_object", with("/gradscope_embedding_run/tables", "{\"report\": 1}"));
  write_seed(dir, "tables_repeated",
             with("/gradscope_embedding_run/tables/1", real[Json::json_pointer(table)].dump()));
  const std::string text = real.dump(2);
  write_seed(dir, "cut_in_half", text.substr(0, text.size() / 2));
  write_seed(dir, "trailing_garbage", text + "}]garbage");
  write_seed(dir, "deep_nesting", std::string(20000, '[') + std::string(20000, ']'));
  write_seed(dir, "invalid_utf8_layer", with(table + "/report/layer", "\"\xff\xfe\""));
  write_seed(dir, "nul_in_layer", with(table + "/report/layer", "\"a\\u0000b\""));
  // Values no writer produces, in an otherwise real file.
  write_seed(dir, "histogram_sizes_disagree",
             with(table + "/profile/exposure/counts", "[1, 2, 3, 4, 5, 6, 7]"));
  write_seed(dir, "histogram_edges_descending",
             with(table + "/profile/velocity/edges", "[10, 1, 0.1]"));
  write_seed(dir, "histogram_edges_null",
             with(table + "/profile/oscillation/edges", "[null, null]"));
  write_seed(dir, "count_most_negative",
             with(table + "/profile/exposure/below", "-9223372036854775808"));
  write_seed(dir, "rows_largest",
             with(table + "/report/embedding_stats/num_embeddings", "9223372036854775807"));
  write_seed(dir, "dim_negative", with(table + "/report/embedding_stats/dim", "-4"));
  write_seed(dir, "number_beyond_double",
             with(table + "/report/embedding_stats/popularity_gini", "1e999"));
  write_seed(dir, "number_as_text",
             with(table + "/report/embedding_stats/median_velocity", "\"fast\""));
  write_seed(dir, "lorenz_points_short", with(table + "/profile/lorenz", "[[0], [1, 2, 3], []]"));
  write_seed(dir, "rows_not_integers",
             with(table + "/report/embedding_stats/lowest_saliency_rows", "[1.5, -2, 1e30]"));
  write_seed(dir, "evidence_not_numbers",
             with(table + "/report/diagnostics",
                  "[{\"type\": \"X\", \"premise\": \"\", \"implies\": \"\", "
                  "\"action\": \"\", \"expected_effect\": \"\", \"confidence\": 2, "
                  "\"evidence\": {\"a\": [1], \"example_rows\": \"x\"}}]"));
}

}  // namespace gradscope::fuzz
