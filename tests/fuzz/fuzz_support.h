// What every fuzz target needs: a private scratch folder for the files an input becomes, and
// quiet standard streams (the code under test prints reports and warnings; libFuzzer's own
// output and sanitizer reports do not go through std::cout or std::cerr, so they still show).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradscope::fuzz {

/// A folder of its own under $TMPDIR (or /tmp), removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  /// `path()/name`.
  std::string file(const std::string& name) const;
  /// Removes everything in the folder, so no file of one input is left for the next.
  void clear() const;
  /// Writes `size` bytes as `path()/name`, replacing it.
  void write(const std::string& name, const uint8_t* data, std::size_t size) const;

 private:
  std::string path_;
};

/// Sends std::cout and std::cerr nowhere for the rest of the process.
void silence_standard_streams();

}  // namespace gradscope::fuzz
