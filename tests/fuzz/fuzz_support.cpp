#include "fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <streambuf>
#include <vector>

namespace gradscope::fuzz {
namespace {

// A stream buffer that accepts and drops everything (a null rdbuf would set badbit instead,
// which code under test could see as a failed write).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

}  // namespace

void check_budget(std::size_t size, double seconds) {
  const double budget = kBudgetFixedSeconds + kBudgetSecondsPerByte * static_cast<double>(size);
  if (seconds > budget)
    die("slow input: " + std::to_string(seconds) + " s for " + std::to_string(size) + " bytes (budget " +
        std::to_string(budget) + " s): work grows faster than the input");
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/gradscope-fuzz-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) die("cannot create a folder like '" + pattern + "'");
  path_ = buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::file(const std::string& name) const { return path_ + "/" + name; }

void ScratchDir::clear() const {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec))
    std::filesystem::remove_all(entry.path(), ec);
  if (ec) die("cannot empty '" + path_ + "': " + ec.message());
}

void ScratchDir::write(const std::string& name, const uint8_t* data, std::size_t size) const {
  std::ofstream out(file(name), std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) die("cannot write '" + file(name) + "'");
}

void silence_standard_streams() {
  static NullBuffer null;
  std::cout.rdbuf(&null);
  std::cerr.rdbuf(&null);
}

}  // namespace gradscope::fuzz
