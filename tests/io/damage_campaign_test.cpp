// Random damage, many times over: no flipped byte in a run's log or database may change what
// the reader returns without an error. Each read either fails naming the damage, or returns
// every committed step exactly; --partial returns only exact steps. Counts are printed for
// docs/reliability.md.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "gradscope/core/error.h"

#include "gradscope/io/run_reader.h"
#include "gradscope/io/run_writer.h"
#include "killed_run.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using test::read_bytes;
using test::same_stats;
using test::stats_for;
using test::write_bytes;

constexpr int kSteps = 50, kNodes = 8;

enum class Outcome { kReported, kExact, kWrong };

// Reads `dir` and compares with what was written: steps 0..kSteps-1, kNodes records each.
// With `partial`, fewer steps are fine but each returned one must be exact.
Outcome read_and_compare(const fs::path& dir, bool partial) {
  try {
    RunReader r(dir.string(), ReadOptions{partial});
    std::map<int64_t, std::vector<Record>> steps;
    r.for_each([&](const Record& rec) { steps[rec.step].push_back(rec); });
    if (!partial && steps.size() != static_cast<std::size_t>(kSteps)) return Outcome::kWrong;
    for (const auto& [step, records] : steps) {
      if (step < 0 || step >= kSteps || records.size() != static_cast<std::size_t>(kNodes)) return Outcome::kWrong;
      for (int n = 0; n < kNodes; ++n)
        if (records[n].node != test::node_name(n) || !same_stats(records[n].stats, stats_for(step, n)))
          return Outcome::kWrong;
    }
    return partial && steps.size() < static_cast<std::size_t>(kSteps) ? Outcome::kReported : Outcome::kExact;
  } catch (const Error&) {
    return Outcome::kReported;
  }
}

struct Tally {
  int reported = 0, exact = 0, wrong = 0;
  void add(Outcome o) { o == Outcome::kReported ? ++reported : o == Outcome::kExact ? ++exact : ++wrong; }
};

// A run its writer closed (everything in run.db), or one it left when killed (most of it in
// run.db-wal).
void write_run(const fs::path& dir, bool killed) {
  if (killed) return test::write_killed_run(dir, kSteps, kNodes);
  RunWriter w(dir.string());
  for (int step = 0; step < kSteps; ++step)
    for (int n = 0; n < kNodes; ++n) w.add(Record{step, test::node_name(n), Site::kParamGrad, stats_for(step, n)});
}

// GRADSCOPE_CAMPAIGN_FLIPS sets a longer campaign than the one make test runs.
int flips_or(int fallback) {
  const char* env = std::getenv("GRADSCOPE_CAMPAIGN_FLIPS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : fallback;
}

void flip_campaign(const std::string& name, bool killed, const char* file, int flips, uint32_t seed) {
  const fs::path dir = test::fresh_dir(name);
  write_run(dir, killed);
  ASSERT_EQ(read_and_compare(dir, false), Outcome::kExact);
  const fs::path target = dir / file;
  const std::string original = read_bytes(target);
  std::mt19937 rng(seed);
  Tally strict, partial;
  for (int i = 0; i < flips; ++i) {
    std::string damaged = original;
    const std::size_t at = rng() % damaged.size();
    damaged[at] = static_cast<char>(damaged[at] ^ (1 << (rng() % 8)));
    write_bytes(target, damaged);
    const Outcome s = read_and_compare(dir, false), p = read_and_compare(dir, true);
    EXPECT_NE(s, Outcome::kWrong) << "byte " << at << " of " << file << ": a wrong run without an error";
    EXPECT_NE(p, Outcome::kWrong) << "byte " << at << " of " << file << ": --partial returned a wrong step";
    EXPECT_EQ(read_bytes(target), damaged) << "the reader changed the damaged file";
    strict.add(s);
    partial.add(p);
  }
  std::printf("%s: %d flips: strict %d reported, %d exact, %d wrong; partial %d short with warnings, %d whole, %d wrong\n",
              file, flips, strict.reported, strict.exact, strict.wrong, partial.reported, partial.exact, partial.wrong);
  fs::remove_all(dir);
}

TEST(DamageCampaign, NoFlippedByteInTheLogChangesARunSilently) {
  // Each damaged log costs the reader a 100 ms second look (a live writer finishes a frame).
  flip_campaign("campaign-wal", true, "run.db-wal", flips_or(40), 7);
}

TEST(DamageCampaign, NoFlippedByteInTheDatabaseChangesARunSilently) {
  flip_campaign("campaign-db", false, "run.db", flips_or(300), 11);
}

}  // namespace
}  // namespace gradscope
