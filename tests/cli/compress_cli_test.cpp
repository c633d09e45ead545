// gradscope compress RUN: a recipe from a saved run (run.db + units.json) as a user runs it:
// exit codes, stderr text, and the recipe file it writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../common/compress_fixture.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/store/run_metadata.h"
#include "gradscope/core/compress/rows.h"
#include "gradscope/core/compress/packed.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/packed_file.h"
#include "gradscope/io/compress/rows_json.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "run_cli.h"
#include "../common/schema4_run.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace gradscope;

using test::CliResult;
using test::fresh_dir;

CliResult run(const std::string& args) { return test::run_cli(args); }

// A saved run of a 6-4-3 MLP: 5 steps of gradients and a units.json with fc1's unit 2 dead.
fs::path saved_run(bool with_units = true) {
  const fs::path dir = fresh_dir("compress-run");
  {
    RunWriter w((dir / "r").string());
    for (int64_t step = 0; step < 5; ++step) {
      for (const char* node : {"fc1", "fc2"}) {
        Stats g;
        g.count = g.finite = 28;
        g.sum_sq = node[2] == '1' ? 0.01 : 1.0;
        w.add(Record{step, node, Site::kParamGrad, g});
      }
      w.end_step();
    }
    w.close();
  }
  std::vector<compress::NodeProfile> nodes = test::linear_chain(6, 4, 3);
  for (compress::NodeProfile* p : {&nodes[0], &nodes[1]}) {
    p->batch = 8;
    p->max_abs.assign(p->units(), 0.5);
    p->weight_sq.assign(p->units(), 1.0);
    p->act_sq.assign(p->units(), 1.0);
    p->out_grad_sq.assign(p->units(), 0.01);
    p->zero_frac.assign(p->units(), 0.0);
  }
  nodes[0].zero_frac[2] = 1.0;
  if (with_units) save_compress_profile((dir / "r").string(), nodes);
  return dir / "r";
}

TEST(CompressCli, WritesARecipeWithinTheBudget) {
  const fs::path run_dir = saved_run();
  const fs::path out = run_dir.parent_path() / "recipe.json";
  // FP32: fc1 24 x 4 + 16 = 112, fc2 12 x 4 + 12 = 60.
  const CliResult r = run("compress " + run_dir.string() + " --budget-bytes 100 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("of 172 bytes"));
  EXPECT_THAT(r.out, HasSubstr("written to " + out.string()));
  const compress::Recipe recipe = load_recipe(out.string());
  EXPECT_LE(recipe.bytes, 100);
  EXPECT_EQ(recipe.fp32_bytes, 172);
  EXPECT_THAT(recipe.nodes[0].pruned_units, ::testing::Contains(2));  // the dead unit
  EXPECT_THAT(recipe.nodes[0].premise, HasSubstr("1 units dead"));
  EXPECT_THAT(recipe.nodes[1].premise, HasSubstr("over 5 steps"));
  // Without -o the recipe JSON goes to stdout; --json says so too, and with -o prints it
  // instead of the summary lines.
  const CliResult s = run("compress " + run_dir.string() + " --max-loss 0");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, StartsWith("{\n  \"gradscope_compression_recipe\""));
  EXPECT_EQ(run("compress --json " + run_dir.string() + " --max-loss 0").out, s.out);
  const CliResult j = run("compress " + run_dir.string() + " --max-loss 0 --json -o " + out.string());
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out, s.out);
  EXPECT_EQ(test::slurp(out), s.out);
  // The profile is a document inside run.db: nothing lies beside it.
  EXPECT_FALSE(fs::exists(run_dir / "units.json"));
  fs::remove_all(run_dir.parent_path());
}

TEST(CompressCli, BadInputExitsWithWhatIsWrong) {
  const fs::path run_dir = saved_run();
  CliResult r = run("compress " + run_dir.string() + " --budget-bytes 10");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith("gradscope: error: budget of 10 bytes cannot be met: the smallest reachable size is "));
  r = run("compress " + run_dir.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("give --budget-bytes N or --max-loss X"));
  r = run("compress " + run_dir.string() + " --budget-bytes 100 --max-loss 1");
  EXPECT_EQ(r.code, 2);
  r = run("compress " + run_dir.string() + " --budget-bytes 0");
  EXPECT_EQ(r.code, 2);
  r = run("compress " + run_dir.string() + " --max-loss -1");
  EXPECT_EQ(r.code, 2);
  // What CLI11 alone let through: a count past int64 (clamped), NaN (no comparison fails), and
  // a leading zero (octal).
  r = run("compress " + run_dir.string() + " --budget-bytes 9223372036854775808");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("9223372036854775808 is not a byte count from 1 to 9223372036854775807"));
  r = run("compress " + run_dir.string() + " --max-loss nan");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("nan is not a number from 0 to 1e+300"));
  EXPECT_EQ(run("compress " + run_dir.string() + " --budget-bytes 0100").out,
            run("compress " + run_dir.string() + " --budget-bytes 100").out);
  put_run_document(run_dir.string(), "units.json", "{\"gradscope_compression_profile\": {\"version\": 1, \"nodes\": [{}]}}");
  r = run("compress " + run_dir.string() + " --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("document 'units.json': gradscope_compression_profile.nodes[0]"));
  fs::remove_all(run_dir.parent_path());
  const fs::path bare = saved_run(false);
  r = run("compress " + bare.string() + " --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no units.json"));
  fs::remove_all(bare.parent_path());
  r = run("compress /nonexistent/run --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
}

// The 6-4-3 MLP's weights as a safetensors file (what gradscope.compress.save_weights writes),
// with one buffer that is not a node's.
fs::path weights_file(const fs::path& dir, int64_t fc2_units = 3) {
  static std::vector<float> w1(24), b1(4), w2(12), b2(3);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * static_cast<float>(i) - 1.0f;
  for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = 0.05f * static_cast<float>(i * i % 7) - 0.2f;
  b1 = {0.1f, 0.2f, 0.3f, 0.4f};
  b2 = {-0.1f, 0.0f, 0.1f};
  static const int64_t steps = 12;
  const fs::path path = dir / "weights.safetensors";
  write_packed(path.string(), compress::pack(compress::Recipe{}, {{"fc1.weight", "F32", {4, 6}, w1.data()},
                                                                  {"fc1.bias", "F32", {4}, b1.data()},
                                                                  {"fc2.weight", "F32", {fc2_units, 4}, w2.data()},
                                                                  {"fc2.bias", "F32", {3}, b2.data()},
                                                                  {"norm.steps", "I64", {1}, &steps}}));
  return path;
}

TEST(CompressCli, PackedModelFromASavedRunAndItsWeights) {
  const fs::path run_dir = saved_run();
  const fs::path dir = run_dir.parent_path();
  const fs::path weights = weights_file(dir), packed = dir / "model.safetensors", out = dir / "recipe.json";
  const CliResult r = run("compress " + run_dir.string() + " --budget-bytes 100 -o " + out.string() + " --weights " +
                          weights.string() + " --packed " + packed.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("packed model written to " + packed.string() + ": " +
                               std::to_string(fs::file_size(packed)) + " bytes on disk"));
  const compress::Recipe recipe = load_recipe(out.string());
  const compress::PackedModel p = read_packed(packed.string());
  EXPECT_EQ(p.node_bytes, recipe.bytes);
  EXPECT_EQ(p.other_bytes, 8);
  // This model is tiny: the manifest outweighs what packing saves, so compare the data.
  EXPECT_LT(p.data_bytes(), read_packed(weights.string()).data_bytes());
  // fc1's dead unit 2 is not stored and comes back as zeros, with fc2's input 2.
  ASSERT_THAT(recipe.nodes[0].pruned_units, ::testing::Contains(2));
  EXPECT_THAT(p.nodes[1].pruned_inputs, ::testing::Contains(2));
  for (const compress::StoredTensor& t : compress::unpack(p)) {
    if (t.name != "fc1.weight") continue;
    std::vector<float> v(24);
    std::memcpy(v.data(), t.data.data(), 96);
    for (int i = 12; i < 18; ++i) EXPECT_EQ(v[i], 0.0f);
  }
  // --json keeps stdout for the recipe; the line goes to stderr.
  const CliResult j = run("compress " + run_dir.string() + " --budget-bytes 100 --json --weights " + weights.string() +
                          " --packed " + packed.string());
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_TRUE(nlohmann::json::accept(j.out));
  EXPECT_THAT(j.err, HasSubstr("packed model written to"));
  fs::remove_all(dir);
}

TEST(CompressCli, PackedModelBadInputSaysWhatIsWrong) {
  const fs::path run_dir = saved_run();
  const fs::path dir = run_dir.parent_path();
  const std::string base = "compress " + run_dir.string() + " --budget-bytes 100 ";
  CliResult r = run(base + "--packed " + (dir / "m").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--weights"));
  r = run(base + "--weights " + weights_file(dir).string());
  EXPECT_EQ(r.code, 2);
  r = run(base + "--weights " + (dir / "none").string() + " --packed " + (dir / "m").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("the weights file '" + (dir / "none").string() + "' (--weights): "));
  EXPECT_THAT(r.err, HasSubstr("no such file"));
  EXPECT_THAT(r.err, Not(HasSubstr("packed model")));  // it is the input, not a packed model
  const fs::path wrong = weights_file(dir, 2);  // fc2 of 2 units, the run's has 3
  r = run(base + "--weights " + wrong.string() + " --packed " + (dir / "m").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("--weights '" + wrong.string() + "': pack: the recipe does not fit the model: node 'fc2'"));
  EXPECT_FALSE(fs::exists(dir / "m"));
  // A packed model is not a weights file.
  const fs::path w = weights_file(dir);
  ASSERT_EQ(run(base + "--weights " + w.string() + " --packed " + (dir / "p").string()).code, 0);
  r = run(base + "--weights " + (dir / "p").string() + " --packed " + (dir / "q").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("is already a packed model"));
  fs::remove_all(dir);
}

// An item table of 8 rows x 4: rows 6 and 7 never exposed, row 0 looked up most.
compress::RowProfile item_rows() {
  compress::RowProfile t;
  t.table = "item";
  t.rows = 8;
  t.dim = 4;
  for (int64_t i = 0; i < t.rows; ++i) {
    t.lookups.push_back(i < 6 ? 40.0 / (i + 1) : 0.0);
    t.exposed.push_back(i < 6);
    t.max_abs.push_back(0.25 + 0.1 * i);
    t.sum_sq.push_back(0.1 + 0.05 * i);
    t.fallback_sq.push_back(0.02 + 0.01 * i);
  }
  t.fallback = {0.1, -0.2, 0.3, 1.0 / 3};
  return t;
}

TEST(CompressCli, TableRecipesFromASavedRunEqualTheInMemoryRecipe) {
  const fs::path run_dir = saved_run();
  compress::RowProfile user = item_rows();
  user.table = "user";
  save_row_profiles(run_dir.string(), {item_rows(), user});
  const fs::path out = run_dir.parent_path() / "rows.recipe.json";
  const CliResult r = run("compress " + run_dir.string() + " --table item=60 --table user=100 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("table item: "));
  EXPECT_THAT(r.out, HasSubstr("of 128 bytes"));
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, render_row_recipes_json({compress::make_row_recipe(item_rows(), 60), compress::make_row_recipe(user, 100)}));
  const std::vector<compress::RowRecipe> back = parse_row_recipes_json(text, out.string());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_LE(back[0].bytes, 60);
  EXPECT_EQ(back[0].level[7], compress::kRowPruned);  // never exposed: pruned first
  const CliResult s = run("compress " + run_dir.string() + " --table user=100");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, StartsWith("{\n  \"gradscope_row_recipes\""));
  // With the model's weights: the item table packed row by row (the entry "item.weight"), the
  // rest as it is; a table the weights lack is named.
  std::vector<float> item(8 * 4), fc(6);
  for (std::size_t i = 0; i < item.size(); ++i) item[i] = 0.1f * static_cast<float>(i) - 1.5f;
  const fs::path weights = run_dir.parent_path() / "w.safetensors", packed = run_dir.parent_path() / "p.safetensors";
  write_packed(weights.string(), compress::pack(compress::Recipe{}, {{"item.weight", "F32", {8, 4}, item.data()},
                                                                     {"fc.weight", "F32", {1, 6}, fc.data()}}));
  const CliResult t = run("compress " + run_dir.string() + " --table item=60 --weights " + weights.string() + " --packed " +
                          packed.string());
  ASSERT_EQ(t.code, 0) << t.err;
  const compress::PackedModel p = read_packed(packed.string());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].name, "item.weight");
  EXPECT_EQ(p.table_bytes, compress::make_row_recipe(item_rows(), 60).bytes);
  EXPECT_EQ(p.other_bytes, 24);
  const CliResult u = run("compress " + run_dir.string() + " --table user=100 --weights " + weights.string() +
                          " --packed " + packed.string());
  EXPECT_EQ(u.code, 3);
  EXPECT_THAT(u.err, HasSubstr("holds no entry 'user' or 'user.weight' for table 'user'"));
  fs::remove_all(run_dir.parent_path());
}

TEST(CompressCli, TableRecipesSayWhatTheRunLacks) {
  const fs::path run_dir = saved_run();
  CliResult r = run("compress " + run_dir.string() + " --table item=60");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no embedding rows to compress: no rows.json; gradscope::save_row_profiles writes it"));
  put_run_document(run_dir.string(), "embedding.json", "{}");
  r = run("compress " + run_dir.string() + " --table item=60");
  EXPECT_THAT(r.err, HasSubstr("its embedding.json holds per-table summaries, not the per-row lookups and norms"));
  save_row_profiles(run_dir.string(), {item_rows()});
  r = run("compress " + run_dir.string() + " --table user=60");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no embedding table 'user' in rows.json (its tables: 'item')"));
  r = run("compress " + run_dir.string() + " --table item=1");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("smallest reachable size"));
  for (const char* bad : {"item", "item=", "=60", "item=6x", "item=0", "item=-5"}) {
    r = run("compress " + run_dir.string() + " --table " + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("NAME=BYTES")) << bad;
  }
  r = run("compress " + run_dir.string() + " --table item=60 --budget-bytes 100");
  EXPECT_EQ(r.code, 2);
  r = run("compress " + run_dir.string() + " --table item=60 --table item=80");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--table names 'item' twice"));
  fs::remove_all(run_dir.parent_path());
}

// The layout before schema 5 (run.db of version 4, units.json and rows.json beside it) reads as
// it did; `gradscope upgrade` moves the files inside, after which run.db alone gives the same
// recipes; a second upgrade has nothing to do.
TEST(CompressCli, AnOldRunWithSideFilesReadsAndUpgrades) {
  const fs::path run_dir = saved_run();
  save_row_profiles(run_dir.string(), {item_rows()});
  const fs::path side = run_dir.parent_path() / "side";
  ASSERT_EQ(run("export " + run_dir.string() + " --format documents -o " + side.string()).code, 0);
  gradscope::test::make_schema4(run_dir);
  for (const char* name : {"units.json", "rows.json"}) fs::copy_file(side / name, run_dir / name);
  std::ofstream(run_dir / "audit.jsonl") << "{\"step\": 3, \"layer\": \"item\", \"type\": \"ZOMBIE_GRADIENT_SCALE\"}\n";
  const std::string units_cmd = "compress " + run_dir.string() + " --budget-bytes 100";
  const std::string rows_cmd = "compress " + run_dir.string() + " --table item=60";
  const CliResult units = run(units_cmd), rows = run(rows_cmd);
  ASSERT_EQ(units.code, 0) << units.err;
  ASSERT_EQ(rows.code, 0) << rows.err;

  CliResult r = run("upgrade " + run_dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string now = std::to_string(kRunSchemaVersion);
  EXPECT_EQ(r.out, run_dir.string() + ": schema 4 -> " + now + "; moved into run.db: units.json rows.json audit.jsonl\n"
                   "  the files beside run.db are no longer read and may be deleted\n");
  EXPECT_TRUE(fs::exists(run_dir / "units.json"));  // the user's files stay
  const fs::path alone = run_dir.parent_path() / "alone";
  fs::create_directories(alone);
  fs::copy_file(run_dir / "run.db", alone / "run.db");
  EXPECT_EQ(run("compress " + alone.string() + " --budget-bytes 100").out, units.out);
  EXPECT_EQ(run("compress " + alone.string() + " --table item=60").out, rows.out);
  EXPECT_EQ(read_run_log(alone.string()),
            std::vector<std::string>{"{\"step\": 3, \"layer\": \"item\", \"type\": \"ZOMBIE_GRADIENT_SCALE\"}"});
  r = run("upgrade " + alone.string());
  EXPECT_EQ(r.out, alone.string() + ": schema " + now + " -> " + now + "; no side files to move\n");
  r = run("upgrade --json " + alone.string());
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json::parse("{\"gradscope_upgrade\": {\"run\": \"" + alone.string() +
                                  "\", \"schema_from\": " + now + ", \"schema_to\": " + now + ", \"moved\": []}}"));
  // A damaged side file is not moved: the upgrade stops naming it, the run untouched.
  const fs::path bad = run_dir.parent_path() / "bad";
  fs::create_directories(bad);
  fs::copy_file(side / "units.json", bad / "units.json");
  fs::copy_file(run_dir / "run.db", bad / "run.db");
  gradscope::test::make_schema4(bad);
  std::ofstream(bad / "rows.json") << "{\"gradscope_compression_rows\": 1}";
  r = run("upgrade " + bad.string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("rows.json"));
  EXPECT_EQ(RunReader(bad.string()).schema_version(), 4);  // untouched: units.json not moved either
  r = run("export " + bad.string() + " --format documents -o " + (bad / "out").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::slurp(bad / "out" / "units.json"), test::slurp(side / "units.json"));
  EXPECT_EQ(run("upgrade /nonexistent/run").code, 3);
  fs::remove_all(run_dir.parent_path());
}

}  // namespace
