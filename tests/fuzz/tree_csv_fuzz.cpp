// libFuzzer target: the input is a data file, read by read_csv_data (with and without a label
// column) and read_sklearn_csv, as `gradscope trees --data` and the tests read them. The
// readers take a path, so each input is written to a private scratch file first. A
// gradscope::Error is an answer; anything else is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gradscope/core/error.h"
#include "gradscope/trees/data_files.h"

namespace {

volatile std::size_t g_sink = 0;

const std::string& scratch_file() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp ? tmp : "/tmp") + "/gradscope-tree-csv-fuzz-" +
           std::to_string(::getpid()) + ".csv";
  }();
  return path;
}

void remove_scratch() { std::remove(scratch_file().c_str()); }

void read_all(const std::string& path) {
  using namespace gradscope;
  for (const char* label : {"", "label", "target"}) {
    try {
      const TreeData d = read_csv_data(path, label);
      g_sink = g_sink + d.x.size() + d.y.size() + d.names.size();
    } catch (const Error&) {
    }
  }
  try {
    const TreeData d = read_sklearn_csv(path);
    if (d.rows > 0) g_sink = g_sink + split_rows(d, 0.3, 1).second.rows;
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::atexit(remove_scratch);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(scratch_file().c_str(), "wb");
  if (!f) std::abort();  // the harness, not the reader, failed
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  read_all(scratch_file());
  return 0;
}
