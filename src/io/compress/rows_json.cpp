#include "gradscope/io/compress/rows_json.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_documents.h"
#include "internal/json_field.h"
#include "internal/side_file.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using internal::Field;
using namespace compress;


std::vector<double> numbers(const Field& f, double lo) {
  std::vector<double> out(f.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = f.element(i).number_from(lo);
  return out;
}

std::vector<double> finites(const Field& f) {
  std::vector<double> out(f.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = f.element(i).finite();
  return out;
}

Json parse(const std::string& text, const std::string& source) {
  try {
    // One object per table; arrays (one value per row) are not bounded by the member count.
    return internal::parse_bounded(text, 8, 1 << 12);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(source + ": not JSON (" + internal::parser_message(e) + ")");
  }
}


}  // namespace

std::string render_row_profiles_json(const std::vector<RowProfile>& tables, int indent) {
  Json out = Json::array();
  for (const RowProfile& t : tables) {
    std::vector<int> exposed(t.exposed.begin(), t.exposed.end());
    out.push_back({{"table", t.table},
                   {"rows", t.rows},
                   {"dim", t.dim},
                   {"lookups", t.lookups},
                   {"exposed", exposed},
                   {"max_abs", t.max_abs},
                   {"sum_sq", t.sum_sq},
                   {"fallback_sq", t.fallback_sq},
                   {"fallback", t.fallback},
                   {"merge_into", t.merge_into},
                   {"merge_sq", t.merge_sq}});
  }
  const Json doc = {{"gradscope_compression_rows", {{"version", 1}, {"tables", out}}}};
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::vector<RowProfile> parse_row_profiles_json(const std::string& text, const std::string& source) {
  const Json doc = parse(text, source);
  std::vector<RowProfile> out;
  try {
    const Field root = Field(doc).at("gradscope_compression_rows");
    if (root.at("version").count() != 1) root.at("version").fail("version is not 1");
    const Field tables = root.at("tables");
    for (std::size_t i = 0; i < tables.size(); ++i) {
      const Field t = tables.element(i);
      RowProfile p;
      p.table = t.at("table").string();
      p.rows = t.at("rows").count();
      p.dim = t.at("dim").count();
      p.lookups = numbers(t.at("lookups"), 0);
      const Field exposed = t.at("exposed");
      for (std::size_t r = 0; r < exposed.size(); ++r) {
        const int64_t e = exposed.element(r).count();
        if (e > 1) exposed.element(r).fail("is not 0 or 1");
        p.exposed.push_back(static_cast<char>(e));
      }
      p.max_abs = numbers(t.at("max_abs"), 0);
      p.sum_sq = numbers(t.at("sum_sq"), 0);
      p.fallback_sq = numbers(t.at("fallback_sq"), 0);
      p.fallback = finites(t.at("fallback"));
      if (t.has("merge_into")) {  // merge candidates are optional
        const Field into = t.at("merge_into");
        for (std::size_t k = 0; k < into.size(); ++k) {
          const double m = into.element(k).number_in(-1, static_cast<double>(p.rows - 1));
          if (m != std::floor(m)) into.element(k).fail("is not a row index");
          p.merge_into.push_back(static_cast<int64_t>(m));
        }
        p.merge_sq = numbers(t.at("merge_sq"), 0);
      }
      for (const RowProfile& seen : out)
        if (seen.table == p.table) t.at("table").fail("table '" + p.table + "' appears twice");
      check_row_profile(p);
      out.push_back(std::move(p));
    }
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return out;
}

void save_row_profiles(const std::string& run, const std::vector<RowProfile>& tables) {
  for (const RowProfile& t : tables) check_row_profile(t);
  internal::save_document(run, "rows.json", "embedding rows", render_row_profiles_json(tables));
}

std::vector<RowProfile> load_run_row_profiles(const std::string& run) {
  const std::optional<RunDocument> rows = read_run_document(run, "rows.json", kMaxRowProfileBytes, "embedding rows");
  if (!rows) {
    const std::string has = read_run_document(run, "embedding.json", kMaxRowProfileBytes)
                                ? " (its embedding.json holds per-table summaries, not the per-row lookups and norms)"
                                : "";
    throw Error("run '" + run + "': no embedding rows to compress: no rows.json" + has +
                "; gradscope::save_row_profiles writes it after training (docs/compression.md)");
  }
  return parse_row_profiles_json(rows->text, rows->where);
}

std::string render_row_recipes_json(const std::vector<RowRecipe>& recipes, int indent) {
  Json out = Json::array();
  for (const RowRecipe& r : recipes) {
    Json levels = Json::array();
    for (uint8_t l : r.level) levels.push_back(compress::row_level_name(l));
    out.push_back({{"table", r.table},
                   {"method", r.method},
                   {"rows", r.rows},
                   {"dim", r.dim},
                   {"bytes", r.bytes},
                   {"fp32_bytes", r.fp32_bytes},
                   {"predicted_cost", std::isfinite(r.predicted_cost) ? Json(r.predicted_cost) : Json(nullptr)},
                   {"premise", r.premise},
                   {"action", r.action},
                   {"level", levels},
                   {"merged_into", r.merged_into},
                   {"fallback", r.fallback}});
  }
  const Json doc = {{"gradscope_row_recipes", {{"version", 1}, {"tables", out}}}};
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::vector<RowRecipe> parse_row_recipes_json(const std::string& text, const std::string& source) {
  const Json doc = parse(text, source);
  std::vector<RowRecipe> out;
  try {
    const Field root = Field(doc).at("gradscope_row_recipes");
    if (root.at("version").count() != 1) root.at("version").fail("version is not 1");
    const Field tables = root.at("tables");
    for (std::size_t i = 0; i < tables.size(); ++i) {
      const Field t = tables.element(i);
      RowRecipe r;
      r.table = t.at("table").string();
      for (const RowRecipe& seen : out)
        if (seen.table == r.table) t.at("table").fail("table '" + r.table + "' appears twice (a table is decided once)");
      r.method = t.at("method").string();
      r.rows = t.at("rows").count();
      r.dim = t.at("dim").count();
      if (r.dim < 1) t.at("dim").fail("is < 1");
      r.predicted_cost = t.at("predicted_cost").number();
      r.premise = t.at("premise").string();
      r.action = t.at("action").string();
      const Field levels = t.at("level");
      if (static_cast<int64_t>(levels.size()) != r.rows)
        levels.fail(std::to_string(levels.size()) + " levels for " + std::to_string(r.rows) + " rows");
      for (std::size_t k = 0; k < levels.size(); ++k) {
        const std::string name = levels.element(k).string();
        uint8_t l = 0;
        while (l < compress::kRowLevels && name != compress::row_level_name(l)) ++l;
        if (l == compress::kRowLevels)
          levels.element(k).fail("'" + name + "' is not fp32, fp16, int8, int4, int3, int2, pruned or merged");
        r.level.push_back(l);
      }
      const Field merged = t.at("merged_into");
      for (std::size_t k = 0; k < merged.size(); ++k) {
        const double m = merged.element(k).number_in(-1, static_cast<double>(r.rows - 1));
        if (m != std::floor(m)) merged.element(k).fail("is not a row index");
        r.merged_into.push_back(static_cast<int64_t>(m));
      }
      if (!r.merged_into.empty() && static_cast<int64_t>(r.merged_into.size()) != r.rows)
        merged.fail(std::to_string(r.merged_into.size()) + " entries for " + std::to_string(r.rows) + " rows");
      r.fallback = finites(t.at("fallback"));
      if (static_cast<int64_t>(r.fallback.size()) != r.dim)
        t.at("fallback").fail(std::to_string(r.fallback.size()) + " values for dim " + std::to_string(r.dim));
      r.bytes = row_bytes(r.dim, r.level);
      r.fp32_bytes = row_bytes(r.dim, std::vector<uint8_t>(r.level.size(), kRowFp32));
      out.push_back(std::move(r));
    }
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return out;
}

}  // namespace gradscope
