// gradscope compress RUN: a recipe from a saved run (run.db + units.json) as a user runs it:
// exit codes, stderr text, and the recipe file it writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../common/compress_fixture.h"
#include "gradscope/core/compress_rule.h"
#include "gradscope/io/compress_json.h"
#include "gradscope/io/run_writer.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
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
  // Without -o the recipe JSON goes to stdout.
  const CliResult s = run("compress " + run_dir.string() + " --max-loss 0");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, StartsWith("{\n  \"gradscope_compression_recipe\""));
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
  std::ofstream(run_dir / "units.json") << "{\"gradscope_compression_profile\": {\"version\": 1, \"nodes\": [{}]}}";
  r = run("compress " + run_dir.string() + " --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("units.json: gradscope_compression_profile.nodes[0]"));
  fs::remove_all(run_dir.parent_path());
  const fs::path bare = saved_run(false);
  r = run("compress " + bare.string() + " --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("no units.json"));
  fs::remove_all(bare.parent_path());
  r = run("compress /nonexistent/run --budget-bytes 100");
  EXPECT_EQ(r.code, 3);
}

}  // namespace
