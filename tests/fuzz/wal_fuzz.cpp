// libFuzzer target: the input is a run's write-ahead log (run.db-wal), judged by check_wal the
// way every reader judges it before trusting SQLite's recovery (src/io/store/internal/wal_check.h).
// Beyond "no crash": what check_wal says must be self-consistent (frames within the file,
// committed within valid within whole frames, damage after the valid prefix) and the same
// whether the log is judged from memory or read from a file a frame at a time. A broken
// invariant aborts, so libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz_support.h"
#include "store/internal/wal_check.h"

namespace {

using gradscope::internal::WalCheck;

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "wal_fuzz: invariant broken: %s\n", what);
  std::abort();
}

constexpr int64_t kHeaderBytes = 32, kFrameHeaderBytes = 24;

void check_invariants(const WalCheck& c, int64_t size) {
  require(c.bytes == size, "bytes is the input's size");
  require(c.committed_frames >= 0 && c.committed_frames <= c.valid_frames,
          "committed frames within the valid ones");
  require(c.valid_frames <= c.frames, "valid frames within the whole ones");
  const int64_t frame_bytes = kFrameHeaderBytes + (c.page_size ? c.page_size : 512);
  require(c.frames == 0 || kHeaderBytes + c.frames * frame_bytes <= size,
          "whole frames fit in the file");
  require(size < kHeaderBytes + (c.frames + 1) * frame_bytes,
          "every whole frame is counted");
  require(c.damaged() == (c.damaged_from >= 0), "damaged() iff a damaged offset");
  require(c.damaged_commits >= 0 && c.damaged_commits <= c.damaged_frames,
          "damaged commits within the damaged frames");
  require(!c.resumes_after_damage || c.damaged(), "resuming needs damage first");
  if (c.header_damaged) {
    require(!c.header_valid && c.damaged_from == 0 && c.damaged_frames == c.frames,
            "a damaged header loses every frame");
    require(c.valid_frames == 0, "nothing valid after a damaged header");
  } else if (c.damaged_frames > 0) {
    require(c.header_valid, "frame damage only under a valid header");
    require(c.damaged_from == kHeaderBytes + c.valid_frames * frame_bytes,
            "damage starts right after the valid prefix");
    require(c.valid_frames + c.damaged_frames <= c.frames, "damaged frames within the file");
  }
}

bool same(const WalCheck& a, const WalCheck& b) {
  return a.bytes == b.bytes && a.header_valid == b.header_valid &&
         a.header_damaged == b.header_damaged && a.page_size == b.page_size &&
         a.frames == b.frames && a.valid_frames == b.valid_frames &&
         a.committed_frames == b.committed_frames && a.damaged_frames == b.damaged_frames &&
         a.damaged_from == b.damaged_from && a.damaged_commits == b.damaged_commits &&
         a.resumes_after_damage == b.resumes_after_damage;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gradscope::fuzz::silence_standard_streams();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const gradscope::fuzz::ScratchDir dir;
  const WalCheck memory =
      gradscope::internal::check_wal(std::string_view(reinterpret_cast<const char*>(data), size));
  check_invariants(memory, static_cast<int64_t>(size));
  dir.write("run.db-wal", data, size);
  const WalCheck file = gradscope::internal::check_wal_file(dir.file("run.db-wal"));
  require(same(memory, file), "the file is judged as its bytes are");
  return 0;
}
