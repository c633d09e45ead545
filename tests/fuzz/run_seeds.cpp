// The run.db and WAL seeds. Real runs come from RunWriter; a killed run is a child process
// that SIGKILLs itself right after a commit, so its WAL holds exactly the committed steps
// (deterministic, unlike killing it from outside). Hand-made damage is SQL on a copy of a
// real run, with the step checksums recomputed where the damage should get past them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/core/series/rules.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/channel_codec.h"
#include "store/internal/record_codec.h"
#include "store/internal/sqlite_db.h"
#include "run_input.h"
#include "sample_runs.h"
#include "seeds.h"

namespace gradscope::fuzz {
namespace {

namespace fs = std::filesystem;

// Writes `run` in a child that kills itself with SIGKILL after its `commits`-th commit.
void write_killed_run(const fs::path& dir, const SampleRun& run, int commits) {
  fs::remove_all(dir);
  const pid_t pid = fork();
  if (pid < 0) throw Error("cannot fork to write the killed run '" + dir.string() + "'");
  if (pid == 0) {
    try {
      RunWriter writer(dir.string());
      int done = 0;
      for (int64_t step = 0; step < run.steps; ++step) {
        for (Record& r : sample_step(run, step)) writer.add(std::move(r));
        const StepRecords findings = sample_findings(run, step);
        for (const ChannelRecord& c : findings.channels) writer.add(c);
        for (const SimilarityRecord& x : findings.similarities) writer.add(x);
        for (const AttentionRecord& a : findings.attention) writer.add(a);
        if (step % run.commit_every == run.commit_every - 1) {
          writer.commit();
          if (++done == commits) kill(getpid(), SIGKILL);
        }
      }
    } catch (...) {
      _exit(3);
    }
    _exit(4);  // never killed: too few steps for `commits`
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
    throw Error("the writer of the killed run '" + dir.string() + "' did not die by SIGKILL");
}

// Stores each row's schema-2 checksum again in `table` (id or key, name or value), so that
// hand-made damage gets past the row checksums to the checks behind them.
void rechecksum_rows(internal::Database& d, const char* table, const char* key,
                     const char* value) {
  const std::string select = std::string("SELECT ") + key + ", " + value + " FROM " + table;
  const std::string update =
      std::string("UPDATE ") + table + " SET checksum = ? WHERE " + key + " = ?";
  internal::Statement read = d.prepare(select.c_str());
  std::vector<std::pair<std::string, std::string>> rows;
  while (read.step()) rows.emplace_back(read.column_text(0), read.column_text(1));
  for (const auto& [k, v] : rows) {
    internal::Statement write = d.prepare(update.c_str());
    write.bind(1, internal::row_checksum({k, v}));
    write.bind(2, std::string_view(k));
    write.step();
  }
}

// Runs `sql` on a copy of `db` (WAL folded in when the connection closes), with every row
// checksum of the tables it left standing made right again; the copy's bytes.
std::string edited(const fs::path& db, const fs::path& work, const std::string& sql) {
  const fs::path copy = work / "edited.db";
  fs::remove(copy);
  fs::copy_file(db, copy);
  {
    internal::Database d(copy.string(), internal::OpenMode::kReadWrite);
    d.exec(sql.c_str());
    const auto has = [&](const char* table) {
      const std::string q =
          std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + table + "'";
      return d.query_int(q.c_str()) > 0;
    };
    if (has("meta")) rechecksum_rows(d, "meta", "key", "value");
    if (has("sites")) rechecksum_rows(d, "sites", "id", "name");
    if (has("nodes")) rechecksum_rows(d, "nodes", "id", "name");
  }
  return read_bytes(copy);
}

// A copy of `db` whose step `step` in `table` (steps, channels or similarities) holds `blob`
// with n_records `count` and a valid checksum.
std::string with_step(const fs::path& db, const fs::path& work, int64_t step, int64_t count,
                      const std::string& blob, const std::string& table = "steps") {
  const fs::path copy = work / "edited.db";
  fs::remove(copy);
  fs::copy_file(db, copy);
  {
    internal::Database d(copy.string(), internal::OpenMode::kReadWrite);
    const std::string sql =
        "INSERT OR REPLACE INTO " + table + "(step, n_records, checksum, records) VALUES(?, ?, ?, ?)";
    internal::Statement s = d.prepare(sql.c_str());
    s.bind(1, step);
    s.bind(2, count);
    s.bind(3, table == "steps" ? internal::step_checksum(step, blob)
                               : internal::table_step_checksum(table, step, blob));
    s.bind_blob(4, blob.data(), blob.size());
    s.step();
  }
  return read_bytes(copy);
}

std::string record_blob(uint32_t node, uint8_t site, const Stats& stats) {
  std::string blob;
  internal::append_record(blob, node, site, stats);
  return blob;
}

// Summaries no tensor produces: counts that disagree, NaN sums, min above max, huge counts.
Stats impossible_stats() {
  Stats s;
  s.count = 3;
  s.finite = 3;
  s.nan = 5;
  s.zero = 9;
  s.sum = std::numeric_limits<double>::quiet_NaN();
  s.sum_sq = -1;
  s.sum_abs = std::numeric_limits<double>::infinity();
  s.min = 7;
  s.max = -7;
  s.max_abs = -1;
  return s;
}

Stats huge_stats() {
  Stats s;
  s.count = std::numeric_limits<int64_t>::max();
  s.finite = std::numeric_limits<int64_t>::max();
  s.saturated = std::numeric_limits<int64_t>::max();
  s.sum = 1e308;
  s.sum_sq = std::numeric_limits<double>::max();
  s.sum_abs = 1e308;
  s.min = -1e308;
  s.max = 1e308;
  s.max_abs = 1e308;
  return s;
}

// Attention heads and per-step series at their extremes, written by RunWriter as a careless
// writer could: logits and sums at FLT_MAX, past it, at double's ends, Inf, NaN, -0, the
// smallest denormal, a loss of -1e200; with `heads_change`, a node's head count going from 4 to
// 8 at step 6 (the audit refuses that at the call; a run written by other code may hold it).
void write_extreme_run(const fs::path& dir, bool heads_change) {
  fs::remove_all(dir);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double values[] = {std::numeric_limits<float>::max(), 3.5e38, 1e300, std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(), kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                           -0.0, std::numeric_limits<double>::denorm_min(), -1e200, 2.0};
  const SampleRun plain;
  RunWriter w(dir.string());
  for (int64_t step = 0; step < 12; ++step) {
    for (Record& r : sample_step(plain, step)) w.add(std::move(r));
    const double v = values[static_cast<std::size_t>(step) % std::size(values)];
    HeadStats h;
    h.queries = step % 4 == 0 ? std::numeric_limits<int64_t>::max() : 16;
    h.nonfinite_queries = step % 5 == 0 ? h.queries : 0;
    h.max_logit = v;
    h.entropy_sum = -v;
    h.fraction_queries = 16;
    h.entropy_fraction_sum = v;
    h.top_queries = step % 2 == 0 ? 16 : 0;
    w.add(AttentionRecord{step, "encoder/fc1", std::vector<HeadStats>(heads_change && step >= 6 ? 8 : 4, h)});
    w.add(StepScalar{step, kLossSeries, v});
    w.add(StepScalar{step, kGradNormSeries, -v});
    w.add(StepScalar{step, "batch", v});
    w.add(StepScalar{step, "log_z", v * 0.5});
    if (step % 3 == 0) w.commit();
  }
  w.close();
}

std::string flipped(std::string bytes, std::size_t at) {
  if (at < bytes.size()) bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  return bytes;
}

}  // namespace

void write_run_seeds(const fs::path& out, const fs::path& work) {
  const fs::path runs = out / "run_db", wals = out / "wal";
  const auto db_of = [&](const std::string& name) { return work / name / "run.db"; };
  const auto seed_run = [&](const std::string& name, const SampleRun& run) {
    write_sample_run((work / name).string(), run);
    write_seed(runs, name, join_run_input(read_bytes(db_of(name)), {}));
  };

  SampleRun plain;
  seed_run("healthy_and_flagged", plain);
  SampleRun hostile;
  hostile.hostile_names = true;
  seed_run("hostile_names", hostile);
  SampleRun nonfinite;
  nonfinite.nonfinite = true;
  nonfinite.steps = 30;
  nonfinite.commit_every = 7;
  seed_run("nonfinite_from_step_15", nonfinite);
  SampleRun strict;
  strict.thresholds.grad_lo = 1e-3;
  strict.thresholds.grad_hi = 1;
  strict.thresholds.dead_frac = 0.5;
  strict.thresholds.stagnant_steps = 2;
  strict.steps = 4;
  seed_run("own_thresholds", strict);
  SampleRun empty;
  empty.steps = 0;
  seed_run("no_steps", empty);
  for (const bool heads_change : {false, true}) {
    const std::string name = heads_change ? "attention_heads_change" : "attention_and_scalars_at_extremes";
    write_extreme_run(work / name, heads_change);
    write_seed(runs, name, join_run_input(read_bytes(db_of(name)), {}));
  }

  // Killed mid-write: run.db and its WAL, as the crash left them.
  SampleRun killed;
  killed.steps = 40;
  killed.commit_every = 3;
  write_killed_run(work / "killed", killed, 5);
  const std::string killed_db = read_bytes(db_of("killed")),
                    wal = read_bytes(work / "killed" / "run.db-wal");
  write_seed(runs, "killed_after_5_commits", join_run_input(killed_db, wal));
  write_seed(runs, "killed_wal_frame_flipped",
             join_run_input(killed_db, flipped(wal, wal.size() / 2)));
  write_seed(runs, "killed_wal_cut_mid_frame",
             join_run_input(killed_db, wal.substr(0, wal.size() - 1000)));
  write_seed(runs, "killed_wal_header_only", join_run_input(killed_db, wal.substr(0, 32)));
  write_seed(runs, "killed_without_wal", join_run_input(killed_db, {}));
  write_seed(wals, "killed_after_5_commits", wal);
  write_seed(wals, "frame_flipped", flipped(wal, wal.size() / 2));
  write_seed(wals, "salt_flipped", flipped(wal, 16));
  write_seed(wals, "cut_mid_frame", wal.substr(0, wal.size() - 1000));
  write_seed(wals, "header_only", wal.substr(0, 32));
  write_seed(wals, "empty", "");

  // Not a run at all, or a cut one.
  const fs::path base = db_of("healthy_and_flagged");
  const std::string db = read_bytes(base);
  write_seed(runs, "empty_file", "");
  write_seed(runs, "text_file", join_run_input("not a database\n", {}));
  write_seed(runs, "sqlite_header_only", join_run_input(db.substr(0, 100), {}));
  write_seed(runs, "first_page_only", join_run_input(db.substr(0, 4096), {}));
  write_seed(runs, "cut_in_half", join_run_input(db.substr(0, db.size() / 2), {}));
  write_seed(runs, "garbage_wal", join_run_input(db, std::string(4096, '\x5a')));

  // A gradscope-shaped database that says odd things.
  const auto seed_sql = [&](const std::string& name, const std::string& sql) {
    write_seed(runs, name, join_run_input(edited(base, work, sql), {}));
  };
  seed_sql("newer_schema", "PRAGMA user_version=99");
  seed_sql("no_schema_version", "PRAGMA user_version=0");
  seed_sql("no_meta_table", "DROP TABLE meta");
  seed_sql("no_nodes_table", "DROP TABLE nodes");
  seed_sql(
      "bad_thresholds_json",
      "UPDATE meta SET value='{\"grad_lo\": \"x\", \"grad_hi\": 1e999' WHERE key='thresholds'");
  seed_sql("thresholds_out_of_range",
           "UPDATE meta SET value='{\"grad_lo\": -1, \"grad_hi\": 0, \"stagnant_steps\": 1e300, "
           "\"dead_frac\": 2}' "
           "WHERE key='thresholds'");
  seed_sql("bad_numbers_in_meta",
           "UPDATE meta SET value='12abc' WHERE key='queue_waits';"
           "UPDATE meta SET value='99999999999999999999' WHERE key='schema_version'");
  seed_sql("checksum_mismatch", "UPDATE steps SET checksum = checksum + 1 WHERE step = 3");
  seed_sql("records_as_text", "UPDATE steps SET records = 'hello' WHERE step = 2");
  seed_sql("site_renamed", "UPDATE sites SET name = 'a_future_site' WHERE id = 0");
  seed_sql("site_id_out_of_range", "UPDATE sites SET id = 300 WHERE id = 1");
  seed_sql("node_id_huge",
           "INSERT INTO nodes(id, name, checksum) VALUES(4000000000, 'far away', 0)");
  seed_sql("node_name_empty", "UPDATE nodes SET name = '' WHERE id = 0");
  seed_sql("steps_dropped_middle", "DELETE FROM steps WHERE step BETWEEN 4 AND 7");

  // Step rows whose checksum is right but whose content is not.
  const Stats ok = sample_step(plain, 0).front().stats;
  const std::string one = record_blob(0, 0, ok);
  write_seed(runs, "blob_cut_in_half",
             join_run_input(with_step(base, work, 4, 3, one.substr(0, one.size() / 2)), {}));
  write_seed(runs, "count_above_blob",
             join_run_input(with_step(base, work, 4, int64_t{1} << 40, one), {}));
  write_seed(runs, "count_negative", join_run_input(with_step(base, work, 4, -1, one), {}));
  write_seed(runs, "unknown_node",
             join_run_input(with_step(base, work, 4, 1, record_blob(1000, 0, ok)), {}));
  write_seed(runs, "unknown_site",
             join_run_input(with_step(base, work, 4, 1, record_blob(0, 200, ok)), {}));
  write_seed(
      runs, "impossible_stats",
      join_run_input(with_step(base, work, 4, 1, record_blob(1, 1, impossible_stats())), {}));
  write_seed(runs, "huge_stats",
             join_run_input(with_step(base, work, 4, 1, record_blob(2, 3, huge_stats())), {}));
  write_seed(runs, "step_negative", join_run_input(with_step(base, work, -5, 1, one), {}));
  write_seed(
      runs, "step_largest",
      join_run_input(with_step(base, work, std::numeric_limits<int64_t>::max(), 1, one), {}));
  write_seed(runs, "step_empty_blob", join_run_input(with_step(base, work, 20, 0, ""), {}));

  // The schema-3 tables: damaged, missing, or saying what no writer says.
  seed_sql("channels_checksum_mismatch", "UPDATE channels SET checksum = checksum + 1 WHERE step = 2");
  seed_sql("no_channels_table", "DROP TABLE channels");
  seed_sql("no_similarities_table", "DROP TABLE similarities");
  seed_sql("no_architecture_table", "DROP TABLE architecture");
  seed_sql("no_node_values_table", "DROP TABLE node_values");
  seed_sql("architecture_row_edited", "UPDATE architecture SET type = 'evil' WHERE position = 1");
  seed_sql("warning_as_blob", "UPDATE warnings SET text = CAST(text AS BLOB)");
  seed_sql("node_value_as_text", "UPDATE node_values SET value = 'high' WHERE position = 0");
  seed_sql("summary_counts_wrong", "UPDATE meta SET value = '99' WHERE key IN ('architecture_rows', 'channel_steps')");
  seed_sql("channel_rows_lost", "DELETE FROM channels WHERE step >= 4");
  const auto channel_blob = [&](uint32_t node, const ChannelRecord& c) {
    std::string blob;
    internal::append_channel(blob, node, c);
    return blob;
  };
  const ChannelRecord view = sample_findings(plain, 0).channels.at(0);
  ChannelRecord wider = view;
  wider.activation.push_back(ok);
  std::string many_channels;
  internal::append_varint(many_channels, 1);
  internal::append_varint(many_channels, uint64_t{1} << 60);
  std::string unknown_other;
  internal::append_similarity(unknown_other, 3000, SimilarityRecord{0, "", "x", 0.5});
  const auto seed_row = [&](const std::string& name, const std::string& table, int64_t step, int64_t count,
                            const std::string& blob) {
    write_seed(runs, name, join_run_input(with_step(base, work, step, count, blob, table), {}));
  };
  seed_row("channels_blob_cut", "channels", 2, 1, channel_blob(1, view).substr(0, 40));
  seed_row("channels_count_huge", "channels", 2, 1, many_channels);
  seed_row("channels_other_width", "channels", 4, 1, channel_blob(1, wider));
  seed_row("channels_without_step_row", "channels", 500, 1, channel_blob(1, view));
  seed_row("similarity_unknown_node", "similarities", 3, 1, unknown_other);
  seed_row("similarity_count_above_blob", "similarities", 3, int64_t{1} << 40, unknown_other);
}

}  // namespace gradscope::fuzz
