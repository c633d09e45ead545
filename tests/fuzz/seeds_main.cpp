// fuzz_seeds OUT: writes the seed corpus of every fuzz target into OUT/<target>/ (replacing
// what was there). Run by the ctest fixture fuzz.seeds and by `make fuzz`.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "seeds.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT\n");
    return 2;
  }
  try {
    const fs::path out = argv[1], work = out / ".work";
    fs::remove_all(out);
    fs::create_directories(work);
    gradscope::fuzz::write_run_seeds(out, work);
    gradscope::fuzz::write_embedding_seeds(out, work);
    fs::remove_all(work);
    gradscope::fuzz::write_tree_seeds(out);
    gradscope::fuzz::write_compress_seeds(out);
    gradscope::fuzz::write_packed_seeds(out);
    gradscope::fuzz::write_lsp_seeds(out);
    for (const auto& dir : fs::directory_iterator(out)) {
      if (!dir.is_directory()) continue;
      const auto n = std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator());
      std::printf("fuzz_seeds: %ld seeds in %s\n", static_cast<long>(n), dir.path().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
