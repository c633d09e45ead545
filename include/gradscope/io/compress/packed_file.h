// A packed model on disk, in safetensors' layout (its public specification,
// github.com/huggingface/safetensors): 8 bytes of little-endian header length N, N bytes of
// JSON naming each tensor's dtype, shape and [begin, end) in the data that follows, then the
// data. Any safetensors reader lists its tensors; gradscope's manifest (which node holds which
// precision, the pruned units and inputs) is a JSON string in the header's "__metadata__". The
// file's size is 8 + N + the packed model's data bytes (docs/compression.md).
//
//   gradscope::write_packed("model.gsq.safetensors", packed);
//   gradscope::compress::PackedModel back = gradscope::read_packed("model.gsq.safetensors");
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/compress/packed.h"

namespace gradscope {

/// Sizes of a written file.
struct PackedFileSize {
  int64_t header_bytes = 0;  ///< 8 + the JSON header (manifest included, padded to 8 bytes)
  int64_t data_bytes = 0;    ///< the tensors: the packed model's data_bytes()
  int64_t file_bytes = 0;    ///< header_bytes + data_bytes, the size on disk
};

/// Writes `packed` to `path` (through a temporary file renamed over it). Throws Error naming the
/// path when it cannot be written.
PackedFileSize write_packed(const std::string& path, const compress::PackedModel& packed);

/// Reads a file write_packed wrote, or any safetensors file (then with no nodes: every tensor
/// is an entry of the state as it is), in time linear in its size. Throws Error naming the path
/// for a file that is not one: too short, a header length beyond the file or above 100 MB, a
/// header that does not start with '{' (a byte-order mark) or is padded with anything but
/// spaces, not JSON, a key given twice, a tensor outside the data, overlapping another or whose
/// shape and dtype need other bytes, data not covered, an unknown dtype, a manifest that does
/// not parse, and everything compress::check_packed refuses (the manifest and the tensors
/// disagree), each naming the tensor, node or table and the field.
compress::PackedModel read_packed(const std::string& path);

/// read_packed of a file's bytes, its errors named "<source>: ...".
compress::PackedModel parse_packed(const std::string& bytes, const std::string& source);

}  // namespace gradscope
