// Random damage, many times over: no flipped byte in a run's log or database may change what
// the reader returns without an error. Each read either fails naming the damage, or returns
// every committed step exactly; --partial returns only exact steps, and anything it leaves out
// (a step's channel view, a summary row) it says it left out. Counts are printed for
// docs/reliability.md.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "gradscope/core/error.h"

#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
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

// The full run (schema 3): per step a channel record and a similarity record, and a summary.
ChannelRecord channel_for(int64_t step) { return {step, test::node_name(1), {stats_for(step, 2), stats_for(step, 3)}, {stats_for(step, 4)}, 0.5 * step}; }
SimilarityRecord similarity_for(int64_t step) { return {step, test::node_name(2), "other", 1.0 / (1.0 + step)}; }
RunSummary summary_for() {
  RunSummary s;
  for (int n = 0; n < kNodes; ++n) {
    s.architecture.nodes.push_back({test::node_name(n), "Linear", n, 10 * n, 10 * n});
    s.values.push_back({test::node_name(n), kGradSnr, 0.1 * n});
  }
  s.warnings = {"a warning"};
  return s;
}

void write_full_run(const fs::path& dir) {
  RunWriter w(dir.string());
  for (int step = 0; step < kSteps; ++step) {
    StepRecords s;
    s.step = step;
    for (int n = 0; n < kNodes; ++n) s.records.push_back({step, test::node_name(n), Site::kParamGrad, stats_for(step, n)});
    s.channels = {channel_for(step)};
    s.similarities = {similarity_for(step)};
    w.add_step(s);
  }
  w.set_summary(summary_for());
}

bool same_channel(const ChannelRecord& a, const ChannelRecord& b) {
  bool same = a.step == b.step && a.node == b.node && a.activation.size() == b.activation.size() &&
              a.output_grad.size() == b.output_grad.size() && a.effective_rank == b.effective_rank;
  for (std::size_t i = 0; same && i < a.activation.size(); ++i) same = same_stats(a.activation[i], b.activation[i]);
  for (std::size_t i = 0; same && i < a.output_grad.size(); ++i) same = same_stats(a.output_grad[i], b.output_grad[i]);
  return same;
}

// The records as read_and_compare checks them; the channel and similarity records and the
// summary exactly as written, or (partial) left out with a warning.
Outcome read_and_compare_full(const fs::path& dir, bool partial) {
  const Outcome records = read_and_compare(dir, partial);
  if (records == Outcome::kWrong) return records;
  try {
    RunReader r(dir.string(), ReadOptions{partial});
    int64_t channels = 0, similarities = 0;
    bool wrong = false;
    r.for_each(RunVisitor{{}, [&](const ChannelRecord& c) { wrong |= !same_channel(c, channel_for(c.step)), ++channels; },
                          [&](const SimilarityRecord& x) {
                            const SimilarityRecord w = similarity_for(x.step);
                            wrong |= x.node != w.node || x.other != w.other || x.cka != w.cka;
                            ++similarities;
                          },
                          {}});
    const RunSummary got = r.summary(), want = summary_for();
    const bool whole_summary = got.architecture.nodes.size() == want.architecture.nodes.size() &&
                               got.values.size() == want.values.size() && got.warnings == want.warnings;
    // A row partial reading skipped moves the later ones up: compare each with its node's.
    std::map<std::string, std::pair<int64_t, double>> by_node;
    for (std::size_t i = 0; i < want.values.size(); ++i)
      by_node[want.values[i].node] = {want.architecture.nodes[i].parameters, want.values[i].value};
    for (const ArchitectureNode& n : got.architecture.nodes)
      wrong |= !by_node.count(n.id) || by_node[n.id].first != n.parameters;
    for (const NodeValue& v : got.values) wrong |= !by_node.count(v.node) || by_node[v.node].second != v.value;
    if (wrong) return Outcome::kWrong;
    const bool whole = channels == kSteps && similarities == kSteps && whole_summary;
    if (!whole && (!partial || r.warnings().empty())) return Outcome::kWrong;  // lost without a word
    return whole ? records : Outcome::kReported;
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

void flip_campaign(const std::string& name, bool killed, const char* file, int flips, uint32_t seed,
                   bool full = false) {
  const fs::path dir = test::fresh_dir(name);
  const auto read_and_compare = full ? read_and_compare_full : gradscope::read_and_compare;
  if (full)
    write_full_run(dir);
  else
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
  std::printf("%s%s: %d flips: strict %d reported, %d exact, %d wrong; partial %d short with warnings, %d whole, %d wrong\n",
              file, full ? " (with channel, similarity and summary rows)" : "", flips, strict.reported, strict.exact, strict.wrong, partial.reported, partial.exact, partial.wrong);
  fs::remove_all(dir);
}

TEST(DamageCampaign, NoFlippedByteInTheLogChangesARunSilently) {
  // The writer is gone: the log is judged the way SQLite's recovery reads it, every frame.
  flip_campaign("campaign-wal", true, "run.db-wal", flips_or(300), 7);
}

TEST(DamageCampaign, NoFlippedByteInTheDatabaseChangesARunSilently) {
  flip_campaign("campaign-db", false, "run.db", flips_or(300), 11);
}

TEST(DamageCampaign, NoFlippedByteChangesAChannelViewOrSummarySilently) {
  flip_campaign("campaign-full", false, "run.db", flips_or(300), 13, /*full=*/true);
}

}  // namespace
}  // namespace gradscope
