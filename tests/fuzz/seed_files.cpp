#include <fstream>
#include <iterator>

#include "gradscope/core/error.h"
#include "seeds.h"

namespace gradscope::fuzz {

void write_seed(const std::filesystem::path& dir, const std::string& name, std::string_view bytes) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error("cannot write seed '" + file.string() + "'");
}

std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read '" + file.string() + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace gradscope::fuzz
