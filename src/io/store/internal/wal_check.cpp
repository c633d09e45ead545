#include "store/internal/wal_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "gradscope/core/error.h"

namespace gradscope::internal {
namespace {

// Layout from https://www.sqlite.org/fileformat2.html#walformat (all fields big-endian).
constexpr std::size_t kHeaderBytes = 32;
constexpr std::size_t kFrameHeaderBytes = 24;
constexpr uint32_t kMagic = 0x377f0682;  // low bit: checksum words big-endian when set
constexpr uint32_t kFormatVersion = 3007000;

// Reads up to n bytes at offset into buf; returns the count read.
using ReadAt = std::function<std::size_t(int64_t offset, unsigned char* buf, std::size_t n)>;

uint32_t big_endian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

uint32_t little_endian32(const unsigned char* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | uint32_t{p[0]};
}

// SQLite's WAL checksum over n bytes (a multiple of 8), continuing from (s0, s1).
void add_checksum(bool big_endian_words, const unsigned char* p, std::size_t n, uint32_t& s0, uint32_t& s1) {
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const uint32_t x0 = big_endian_words ? big_endian32(p + i) : little_endian32(p + i);
    const uint32_t x1 = big_endian_words ? big_endian32(p + i + 4) : little_endian32(p + i + 4);
    s0 += x0 + s1;
    s1 += x1 + s0;
  }
}

bool valid_page_size(uint32_t size) { return size >= 512 && size <= 65536 && (size & (size - 1)) == 0; }

WalCheck check(int64_t bytes, const ReadAt& read_at) {
  WalCheck c;
  c.bytes = bytes;
  unsigned char header[kHeaderBytes];
  if (bytes < static_cast<int64_t>(kHeaderBytes) || read_at(0, header, kHeaderBytes) != kHeaderBytes)
    return c;  // SQLite treats a log without a whole header as empty
  const uint32_t magic = big_endian32(header);
  const bool big_endian_words = (magic & 1) != 0;
  const uint32_t page_size = big_endian32(header + 8);
  c.page_size = valid_page_size(page_size) ? page_size : 0;
  uint32_t s0 = 0, s1 = 0;
  add_checksum(big_endian_words, header, 24, s0, s1);
  c.header_valid = (magic & ~uint32_t{1}) == kMagic && big_endian32(header + 4) == kFormatVersion &&
                   c.page_size != 0 && s0 == big_endian32(header + 24) && s1 == big_endian32(header + 28);
  // With an unreadable page size, frames are counted at the smallest one: enough to say
  // whether anything follows the header.
  const int64_t frame_bytes = static_cast<int64_t>(kFrameHeaderBytes + (c.page_size ? c.page_size : 512));
  c.frames = (bytes - static_cast<int64_t>(kHeaderBytes)) / frame_bytes;
  if (!c.header_valid) {
    c.header_damaged = c.frames > 0;
    if (c.header_damaged) {
      c.damaged_frames = c.frames;
      c.damaged_from = 0;
    }
    return c;
  }
  const uint32_t salt1 = big_endian32(header + 16), salt2 = big_endian32(header + 20);
  std::vector<unsigned char> frame(static_cast<std::size_t>(frame_bytes));
  bool in_prefix = true;
  int64_t first_bad = -1, last_of_this_log = -1, commits_after_bad = 0;
  uint32_t prev0 = s0, prev1 = s1;  // the previous frame's stored checksum
  for (int64_t i = 0; i < c.frames; ++i) {
    const int64_t offset = static_cast<int64_t>(kHeaderBytes) + i * frame_bytes;
    if (read_at(offset, frame.data(), frame.size()) != frame.size()) {
      c.frames = i;  // the file shrank while it was read
      break;
    }
    const unsigned char* f = frame.data();
    const bool this_log = big_endian32(f + 8) == salt1 && big_endian32(f + 12) == salt2;
    const bool commit = big_endian32(f + 4) != 0;
    const uint32_t stored0 = big_endian32(f + 16), stored1 = big_endian32(f + 20);
    // The checksum chains through the previous frame's stored value, so a frame after a
    // damaged one can still be verified on its own.
    uint32_t c0 = prev0, c1 = prev1;
    add_checksum(big_endian_words, f, 8, c0, c1);
    add_checksum(big_endian_words, f + kFrameHeaderBytes, c.page_size, c0, c1);
    const bool verifies = this_log && big_endian32(f) != 0 && c0 == stored0 && c1 == stored1;
    if (in_prefix) {
      if (verifies) {
        ++c.valid_frames;
        if (commit) c.committed_frames = c.valid_frames;
      } else {
        in_prefix = false;
        first_bad = i;
      }
    } else if (verifies) {
      c.resumes_after_damage = true;
    }
    if (!in_prefix && this_log) {
      last_of_this_log = i;
      if (commit) ++commits_after_bad;
    }
    prev0 = stored0;
    prev1 = stored1;
  }
  if (first_bad >= 0 && last_of_this_log >= first_bad) {
    c.damaged_frames = last_of_this_log - first_bad + 1;
    c.damaged_from = static_cast<int64_t>(kHeaderBytes) + first_bad * frame_bytes;
    c.damaged_commits = commits_after_bad;
  }
  return c;
}

}  // namespace

WalCheck check_wal(std::string_view bytes) {
  return check(static_cast<int64_t>(bytes.size()), [&](int64_t offset, unsigned char* buf, std::size_t n) {
    if (offset < 0 || static_cast<std::size_t>(offset) >= bytes.size()) return std::size_t{0};
    const std::size_t got = std::min(n, bytes.size() - static_cast<std::size_t>(offset));
    std::memcpy(buf, bytes.data() + offset, got);
    return got;
  });
}

WalCheck check_wal_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return WalCheck{};
    throw Error("run log '" + path + "': cannot open (" + std::strerror(errno) + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw Error("run log '" + path + "': not a regular file");
  return check(static_cast<int64_t>(st.st_size), [&](int64_t offset, unsigned char* buf, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd, buf + done, n - done, offset + static_cast<int64_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw Error("run log '" + path + "': read error (" + std::strerror(errno) + ")");
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  });
}

}  // namespace gradscope::internal
