#include "internal/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gradscope/core/error.h"

namespace gradscope::internal {
namespace {

const char* kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "an unknown kind of file";
}

[[noreturn]] void too_large(std::uintmax_t max_bytes, const std::string& size) {
  throw Error("larger than the limit of " + std::to_string(max_bytes) + " bytes (" + size + ")");
}

void check(const struct stat& st, std::uintmax_t max_bytes) {
  if (!S_ISREG(st.st_mode)) throw Error(std::string("not a regular file (") + kind(st.st_mode) + ")");
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) too_large(max_bytes, std::to_string(st.st_size) + " bytes");
}

[[noreturn]] void cannot_read(int error) { throw Error(std::string("cannot read: ") + std::strerror(error)); }

struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t max_bytes) {
  // Looked at before it is opened: opening a FIFO blocks until a writer comes, and opening a
  // device may act on it.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    cannot_read(errno);
  }
  check(st, max_bytes);
  // Something else may have been put there since: O_NONBLOCK keeps a FIFO's open from waiting,
  // and what was opened is checked again.
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (file.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    cannot_read(errno);
  }
  if (::fstat(file.fd, &st) != 0) cannot_read(errno);
  check(st, max_bytes);
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannot_read(errno);
    if (n == 0) return bytes;
    if (bytes.size() + static_cast<std::size_t>(n) > max_bytes) too_large(max_bytes, "it grew while being read");
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace gradscope::internal
