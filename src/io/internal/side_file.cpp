#include "internal/side_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "gradscope/core/error.h"
#include "internal/json_field.h"
#include "internal/regular_file.h"

namespace gradscope::internal {

namespace fs = std::filesystem;

fs::path run_folder(const std::string& dir) {
  const fs::path p(dir);
  std::error_code ec;
  if (p.filename() == "run.db" || fs::is_regular_file(p, ec)) return p.parent_path();
  return p;
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

std::optional<nlohmann::ordered_json> read_side_json(const fs::path& path, std::uintmax_t max_bytes,
                                                     int max_depth, std::size_t max_members) {
  const std::optional<std::string> text = read_regular_file(path.string(), max_bytes);
  if (!text) return std::nullopt;
  try {
    return parse_bounded(*text, max_depth, max_members);
  } catch (const nlohmann::ordered_json::exception& e) {
    // nlohmann's messages start with "[json.exception.<kind>.<id>] ".
    const std::string what = e.what();
    const auto end = what.find("] ");
    throw Error("malformed: " + (end == std::string::npos ? what : what.substr(end + 2)));
  }
}

}  // namespace gradscope::internal
