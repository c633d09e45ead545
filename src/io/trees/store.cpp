#include "gradscope/io/trees/store.h"

#include <filesystem>

#include "gradscope/core/error.h"
#include "internal/side_file.h"
#include "trees/internal/codec.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFileName = "trees.json";
// The format nests 6 deep (a round's feature triple); its largest object, the per-round
// columns, has 13 members. Parsing refuses more.
constexpr int kMaxDepth = 8;
constexpr std::size_t kMaxMembers = 32;

}  // namespace

void save_tree_summary(const std::string& dir, const TreeRunSummary& summary) {
  const nlohmann::ordered_json doc = internal::tree_summary_to_json(summary);
  try {
    internal::tree_summary_from_json(doc);  // a document gradscope wrote always loads
  } catch (const Error& e) {
    throw Error(internal::document_where(dir, kFileName, "tree") + ": " + e.what());
  }
  // Names from a model file need not be UTF-8 (a UBJSON model's bytes): replaced (U+FFFD) here,
  // not an exception after the rounds are written.
  internal::save_document(dir, kFileName, "tree",
                          doc.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

std::optional<TreeRunSummary> load_tree_summary(const std::string& dir) {
  const auto doc = internal::read_document_json(dir, kFileName, "tree", kMaxTreeFileBytes, kMaxDepth, kMaxMembers);
  if (!doc) return std::nullopt;
  try {
    return internal::tree_summary_from_json(doc->json);
  } catch (const Error& e) {
    throw Error(doc->where + ": " + e.what());
  }
}

void write_tree_run(const std::string& dir, const TreeRunSummary& summary,
                    RunWriterOptions options) {
  const TreeDynamicsReport& r = summary.report;
  if (r.per_round.empty()) throw Error("run '" + dir + "': the model has no rounds to record");
  RunWriter writer(dir, options);
  for (std::size_t round = 0; round < r.per_round.size(); ++round) {
    for (Record& rec : tree_round_records(r, round)) writer.add(std::move(rec));
    writer.end_step();
  }
  // Into run.db once every round is committed and before the end time: a reader that sees
  // the run as finished sees its analysis.
  try {
    writer.commit();
    save_tree_summary(dir, summary);
  } catch (...) {
    // No half-run: the rounds without their analysis would read as a healthy run.
    try {
      writer.close();
    } catch (...) {
      // the first failure is the one to report
    }
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(writer.database_path() + suffix, ec);
    throw;
  }
  writer.close();
}

}  // namespace gradscope
