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

Error file_error(const fs::path& path, const std::string& what) {
  return Error("tree file '" + path.string() + "': " + what);
}

}  // namespace

void save_tree_summary(const std::string& dir, const TreeRunSummary& summary) {
  const fs::path folder = internal::run_folder(dir), path = folder / kFileName;
  const nlohmann::ordered_json doc = internal::tree_summary_to_json(summary);
  try {
    internal::tree_summary_from_json(doc);  // a file gradscope wrote always loads
    internal::replace_file(folder, kFileName, doc.dump(1) + "\n");
  } catch (const Error& e) {
    throw file_error(path, e.what());
  }
}

std::optional<TreeRunSummary> load_tree_summary(const std::string& dir) {
  const fs::path path = internal::run_folder(dir) / kFileName;
  try {
    const auto doc = internal::read_side_json(path, kMaxTreeFileBytes, kMaxDepth, kMaxMembers);
    if (!doc) return std::nullopt;
    return internal::tree_summary_from_json(*doc);
  } catch (const Error& e) {
    throw file_error(path, e.what());
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
  writer.close();
  // After run.db is complete: `ls` finds runs by run.db, and a tree run shows as one only
  // once both files are there.
  save_tree_summary(dir, summary);
}

}  // namespace gradscope
