#include "internal/record_framing.h"

#include <boost/crc.hpp>

namespace gradscope::tensorboard::internal {
namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t n) {
  // Castagnoli: polynomial 0x1EDC6F41, initial and final XOR all ones, reflected in and out.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

void append_record(std::string& out, std::string_view data) {
  const std::size_t start = out.size();
  put_le(out, data.size(), 8);
  put_le(out, mask_crc(crc32c(out.data() + start, 8)), 4);
  out.append(data.data(), data.size());
  put_le(out, mask_crc(crc32c(data.data(), data.size())), 4);
}

}  // namespace gradscope::tensorboard::internal
