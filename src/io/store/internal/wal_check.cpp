#include "store/internal/wal_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
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

WalCheck check(int64_t bytes, const ReadAt& read_at, int64_t frame_limit) {
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
  c.frames = std::min((bytes - static_cast<int64_t>(kHeaderBytes)) / frame_bytes, frame_limit);
  if (!c.header_valid) {
    c.header_damaged = c.frames > 0;
    if (c.header_damaged) {
      c.damaged_frames = c.frames;
      c.damaged_from = 0;
    }
    return c;
  }
  const uint32_t salt1 = big_endian32(header + 16), salt2 = big_endian32(header + 20);
  c.salt1 = salt1;
  c.salt2 = salt2;
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

WalCheck check_wal(std::string_view bytes, int64_t frame_limit) {
  return check(static_cast<int64_t>(bytes.size()), [&](int64_t offset, unsigned char* buf, std::size_t n) {
    if (offset < 0 || static_cast<std::size_t>(offset) >= bytes.size()) return std::size_t{0};
    const std::size_t got = std::min(n, bytes.size() - static_cast<std::size_t>(offset));
    std::memcpy(buf, bytes.data() + offset, got);
    return got;
  }, frame_limit);
}

WalCheck check_wal_file(const std::string& path, int64_t frame_limit) {
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
  }, frame_limit);
}

namespace {

// A descriptor of the file at `path`, opened once per file and never closed: closing any
// descriptor of a file drops every POSIX lock this process holds on it, SQLite's included.
// -1 when the file is missing or not a regular file.
int kept_open(const std::string& path) {
  static std::mutex mu;
  static std::map<std::pair<dev_t, ino_t>, int> files;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  std::lock_guard<std::mutex> lock(mu);
  const auto known = files.find({st.st_dev, st.st_ino});
  if (known != files.end()) return known->second;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat opened{};
  if (fstat(fd, &opened) != 0) return -1;  // kept open all the same: closing it is what must not happen
  files[{opened.st_dev, opened.st_ino}] = fd;
  return opened.st_dev == st.st_dev && opened.st_ino == st.st_ino ? fd : -1;  // else replaced meanwhile
}

uint32_t native32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

bool host_is_big_endian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 0;
}

// The WAL-index header (https://www.sqlite.org/walformat.html): 48 bytes, written twice.
constexpr std::size_t kIndexHeaderBytes = 48;
constexpr uint32_t kIndexVersion = 3007000;
// SQLite's unix locking puts its lock bytes after the index header and checkpoint info (byte
// 120); the ninth, byte 128, is the "dead man switch" every open connection holds shared.
constexpr off_t kDeadManSwitchByte = 128;

}  // namespace

WalIndex read_wal_index(const std::string& path) {
  WalIndex index;
  const int fd = kept_open(path);
  if (fd < 0) return index;
  unsigned char h[2 * kIndexHeaderBytes];
  if (::pread(fd, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return index;
  // A writer updates one copy, then the other: they differ while it writes.
  if (std::memcmp(h, h + kIndexHeaderBytes, kIndexHeaderBytes) != 0) return index;
  uint32_t s0 = 0, s1 = 0;
  add_checksum(host_is_big_endian(), h, 40, s0, s1);
  if (native32(h) != kIndexVersion || h[12] != 1 || s0 != native32(h + 40) || s1 != native32(h + 44)) return index;
  index.valid = true;
  index.committed_frames = native32(h + 16);
  index.salt1 = big_endian32(h + 32);  // copied byte for byte from the log's header
  index.salt2 = big_endian32(h + 36);
  return index;
}

bool wal_index_in_use(const std::string& path) {
  const int fd = kept_open(path);
  if (fd < 0) return false;
  struct flock probe{};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_start = kDeadManSwitchByte;
  probe.l_len = 1;
  // An open file description lock conflicts with every POSIX lock, this process's own too.
  if (fcntl(fd, F_OFD_GETLK, &probe) != 0) return false;
  return probe.l_type != F_UNLCK;
}

}  // namespace gradscope::internal
