// TFRecord framing, the container of TensorBoard event files (TensorFlow's
// core/lib/io/record_writer.cc, a public format):
//   uint64 length, uint32 masked CRC-32C of those 8 bytes, the data, uint32 masked CRC-32C of
//   the data; little endian.
// The mask lets a CRC be stored inside data that is itself checksummed without the two
// cancelling: masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (TensorFlow's crc32c.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gradscope::tensorboard::internal {

/// CRC-32C (Castagnoli, reflected polynomial 0x1EDC6F41) of `n` bytes, from Boost.CRC.
uint32_t crc32c(const void* data, std::size_t n);

/// TensorFlow's masked form of `crc`.
uint32_t mask_crc(uint32_t crc);

/// Appends one framed record holding `data` to `out`.
void append_record(std::string& out, std::string_view data);

/// Bytes a framed record adds around its data.
inline constexpr std::size_t kRecordOverhead = 8 + 4 + 4;

}  // namespace gradscope::tensorboard::internal
