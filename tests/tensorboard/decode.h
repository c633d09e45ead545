// Reading an event file back in the C++ tests: every record's framing and both CRCs checked,
// each event parsed with the library's generated classes. (The independent reader, with
// another protobuf and another CRC-32C, is tb_reader.py.)
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "internal/record_framing.h"
#include "tensorboard_event.pb.h"

namespace gradscope::test {

namespace tbpb = gradscope::tensorboard::proto;

struct Decoded {
  std::vector<tbpb::Event> events;
  std::string problem;  ///< "" when every record was whole and its CRCs right
  std::size_t bytes = 0;
};

inline uint32_t le32(const std::string& s, std::size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

inline Decoded decode_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  Decoded d;
  d.bytes = data.size();
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (pos + 12 > data.size()) return d.problem = "torn header at " + std::to_string(pos), d;
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(data[pos + i]);
    if (le32(data, pos + 8) !=
        tensorboard::internal::mask_crc(tensorboard::internal::crc32c(data.data() + pos, 8)))
      return d.problem = "length crc at " + std::to_string(pos), d;
    if (pos + 12 + len + 4 > data.size())
      return d.problem = "torn record at " + std::to_string(pos), d;
    const std::string body = data.substr(pos + 12, len);
    if (le32(data, pos + 12 + len) !=
        tensorboard::internal::mask_crc(tensorboard::internal::crc32c(body.data(), body.size())))
      return d.problem = "data crc at " + std::to_string(pos), d;
    tbpb::Event e;
    if (!e.ParseFromString(body)) return d.problem = "bad event at " + std::to_string(pos), d;
    d.events.push_back(e);
    pos += 12 + len + 4;
  }
  return d;
}

/// The one event file in `dir`.
inline std::string only_event_file(const std::string& dir) {
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos) {
      if (!found.empty()) return "";
      found = e.path().string();
    }
  return found;
}

/// Runs `body` in a child process whose files may grow to `limit` bytes, SIGXFSZ ignored
/// (so a write past the limit fails with EFBIG, as on a full disk); returns its exit code.
template <class F>
int in_child_with_file_limit(rlim_t limit, F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit rl{limit, limit};
    setrlimit(RLIMIT_FSIZE, &rl);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// A fresh empty folder under the temporary directory.
inline std::string fresh_folder(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gradscope-tb-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace gradscope::test
