// libFuzzer target: the input is a data file, read by read_csv_data (with and without a label
// column) and read_sklearn_csv, as `gradscope trees --data` and the tests read them. The
// readers take a path, so each input is written to a private scratch folder first. A
// gradscope::Error is an answer; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "gradscope/core/error.h"
#include "gradscope/trees/data_files.h"

namespace {

volatile std::size_t g_sink = 0;

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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const gradscope::fuzz::ScratchDir dir;
  dir.write("data.csv", data, size);
  gradscope::fuzz::within_budget(size, [&] { read_all(dir.file("data.csv")); });
  return 0;
}
