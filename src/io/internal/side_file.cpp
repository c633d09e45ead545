#include "internal/side_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_documents.h"
#include "internal/json_field.h"

namespace gradscope::internal {

namespace fs = std::filesystem;

fs::path run_folder(const std::string& dir) {
  const fs::path p(dir);
  std::error_code ec;
  if (p.filename() == "run.db" || fs::is_regular_file(p, ec)) return p.parent_path();
  return p;
}

std::string run_database(const std::string& run) {
  std::error_code ec;
  if (fs::is_regular_file(run, ec)) return run;
  return (run_folder(run) / "run.db").string();
}

void replace_file(const fs::path& folder, const std::string& name, const std::string& text) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error("cannot create the folder: " + ec.message());
  const fs::path part = folder / (name + ".part" + std::to_string(getpid()));
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(std::string("cannot write: ") + std::strerror(errno));
    out << text;
    out.close();
    if (!out) {
      fs::remove(part, ec);
      throw Error("write failed");
    }
  }
  fs::rename(part, folder / name, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(part, ec);
    throw Error("cannot replace: " + why);
  }
}

namespace {
bool holds_run(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(run_database(dir), ec);
}
}  // namespace

std::string document_where(const std::string& dir, const std::string& name, const std::string& kind) {
  const fs::path folder = run_folder(dir);
  if (holds_run(dir)) return "run database '" + run_database(dir) + "', document '" + name + "'";
  return kind + " file '" + (folder / name).string() + "'";
}

void save_document(const std::string& dir, const std::string& name, const std::string& kind,
                   const std::string& text) {
  if (holds_run(dir)) return put_run_document(dir, name, text);
  try {
    replace_file(run_folder(dir), name, text);
  } catch (const Error& e) {
    throw Error(document_where(dir, name, kind) + ": " + e.what());
  }
}

std::optional<JsonDocument> read_document_json(const std::string& dir, const std::string& name,
                                               const std::string& kind, std::uintmax_t max_bytes,
                                               int max_depth, std::size_t max_members) {
  std::optional<RunDocument> doc = read_run_document(dir, name, max_bytes, kind);
  if (!doc) return std::nullopt;
  try {
    return JsonDocument{parse_bounded(doc->text, max_depth, max_members), doc->where};
  } catch (const nlohmann::ordered_json::exception& e) {
    throw Error(doc->where + ": malformed: " + parser_message(e));
  } catch (const Error& e) {
    throw Error(doc->where + ": " + e.what());
  }
}

}  // namespace gradscope::internal
