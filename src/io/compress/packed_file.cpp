#include "gradscope/io/compress/packed_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gradscope/core/error.h"
#include "internal/json_field.h"
#include "internal/regular_file.h"
#include "internal/side_file.h"

namespace gradscope {
namespace {

using Json = nlohmann::ordered_json;
using internal::Field;

constexpr int64_t kMaxHeader = int64_t{100} << 20;  // safetensors' own limit
constexpr std::uintmax_t kMaxFile = std::uintmax_t{16} << 30;

Json manifest_of(const compress::PackedModel& p) {
  Json nodes = Json::array();
  for (const compress::PackedNode& n : p.nodes)
    nodes.push_back({{"node", n.node},
                     {"precision", compress::precision_name(n.precision)},
                     {"weight_shape", n.weight_shape},
                     {"bias", n.has_bias},
                     {"pruned_units", n.pruned_units},
                     {"pruned_inputs", n.pruned_inputs},
                     {"bitmap", n.bitmap},
                     {"bytes", n.bytes}});
  Json tables = Json::array();
  for (const compress::PackedTable& t : p.tables) {
    Json levels = Json::array();
    for (uint8_t l : t.levels) levels.push_back(compress::row_level_name(l));
    tables.push_back({{"name", t.name}, {"rows", t.rows}, {"dim", t.dim}, {"levels", levels}, {"bytes", t.bytes}});
  }
  return {{"gradscope_packed",
           {{"version", 1}, {"node_bytes", p.node_bytes}, {"table_bytes", p.table_bytes}, {"other_bytes", p.other_bytes},
            {"nodes", nodes}, {"tables", tables}}}};
}

// Nesting of a safetensors header (the header, a tensor, its shape) and of the manifest (the
// manifest, gradscope_packed, nodes, a node, its lists): anything deeper is not either.
constexpr int kHeaderDepth = 3;
constexpr int kManifestDepth = 5;
constexpr std::size_t kManifestMembers = 64;  // a node has 8

// `text` as JSON in linear time, a key given twice refused (nlohmann would keep the last).
Json parse_json(const std::string& text, int depth, std::size_t members, const std::string& what) {
  try {
    return internal::parse_bounded(text, depth, members, /*unique_keys=*/true);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(what + " is not JSON (" + internal::parser_message(e) + ")");
  }
}

std::string byte_text(char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(c));
  return buf;
}

bool flag(const Field& f) {
  if (!f.json().is_boolean()) f.fail("must be true or false, got " + internal::shown(f.json()));
  return f.json().get<bool>();
}

// The manifest's fields, typed; what they must agree on is compress::check_packed's.
void read_manifest(const std::string& text, compress::PackedModel& p) {
  const Json m = parse_json(text, kManifestDepth, kManifestMembers, "the manifest");
  if (!m.is_object() || !m.contains("gradscope_packed")) throw Error("the manifest has no gradscope_packed object");
  try {
    const Field g = Field(m).at("gradscope_packed");
    if (g.at("version").count() != 1) g.at("version").fail("is not 1 (written by a newer gradscope?)");
    const Field nodes = g.at("nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Field n = nodes.element(i);
      compress::PackedNode node;
      node.node = n.at("node").string();
      const std::string precision = n.at("precision").string();
      try {
        node.precision = compress::parse_precision(precision);
      } catch (const Error& e) {
        n.at("precision").fail(e.what());
      }
      node.weight_shape = n.at("weight_shape").counts();
      node.has_bias = flag(n.at("bias"));
      node.pruned_units = n.at("pruned_units").counts();
      node.pruned_inputs = n.at("pruned_inputs").counts();
      node.bitmap = flag(n.at("bitmap"));
      node.bytes = n.at("bytes").count();
      p.nodes.push_back(std::move(node));
    }
    if (!g.has("tables")) return;  // written before tables were packed
    const Field tables = g.at("tables");
    for (std::size_t i = 0; i < tables.size(); ++i) {
      const Field t = tables.element(i);
      compress::PackedTable table;
      table.name = t.at("name").string();
      table.rows = t.at("rows").count();
      table.dim = t.at("dim").count();
      const Field levels = t.at("levels");
      for (std::size_t k = 0; k < levels.size(); ++k) {
        const std::string name = levels.element(k).string();
        uint8_t l = 0;
        while (l < compress::kRowLevels && name != compress::row_level_name(l)) ++l;
        if (l == compress::kRowLevels)
          levels.element(k).fail("is not fp32, fp16, int8, int4, int3, int2, pruned or merged");
        table.levels.push_back(l);
      }
      table.bytes = t.at("bytes").count();
      p.tables.push_back(std::move(table));
    }
  } catch (const Error& e) {
    throw Error(std::string("the manifest: ") + e.what());
  }
}

// Safetensors' header as its specification has it: it starts with '{', ends with '}' and
// spaces, and its tensors cover the data exactly once; a tensor's bytes are copied only then.
void parse_file(const std::string& bytes, compress::PackedModel& p) {
  if (bytes.size() < 8) throw Error("too short for a safetensors file (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (n > static_cast<uint64_t>(kMaxHeader) || n > bytes.size() - 8)
    throw Error("header length " + std::to_string(n) + " is beyond the file or the 100 MB limit");
  const std::string text = bytes.substr(8, static_cast<std::size_t>(n));
  if (text.empty() || text[0] != '{')
    throw Error("the header starts with " + (text.empty() ? std::string("nothing") : "byte " + byte_text(text[0])) +
                ", not '{' (a byte-order mark?)");
  // nlohmann's parser takes a NUL for the end of its input.
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw Error("the header holds a NUL byte at offset " + std::to_string(nul) + " (safetensors pads it with spaces)");
  const Json header = parse_json(text, kHeaderDepth, static_cast<std::size_t>(kMaxHeader), "the header");
  if (!header.is_object()) throw Error("the header is not a JSON object");
  if (const char last = text[text.find_last_not_of(' ')]; last != '}')
    throw Error("the header ends with byte " + byte_text(last) + " after its '}' (safetensors pads it with spaces only)");
  const uint64_t data_at = 8 + n, data_size = bytes.size() - data_at;
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // of p.tensors, in order
  p.tensors.reserve(header.size());
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") {
      const Field meta(t, "__metadata__");
      for (const auto& [key, value] : meta.members()) value.string();  // the specification's string map
      if (meta.has("gradscope_manifest")) read_manifest(meta.at("gradscope_manifest").string(), p);
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    const Field f(t, where);
    compress::StoredTensor s;
    s.name = name;
    s.dtype = f.at("dtype").string();
    int64_t size = 0;
    try {
      size = compress::stored_dtype_size(s.dtype);
    } catch (const Error& e) {
      f.at("dtype").fail(e.what());
    }
    s.shape = f.at("shape").counts();
    const std::vector<int64_t> off = f.at("data_offsets").counts();
    if (off.size() != 2 || off[1] < off[0] || static_cast<uint64_t>(off[1]) > data_size)
      throw Error(where + ": data_offsets outside the " + std::to_string(data_size) + " bytes of data");
    int64_t need = size;
    std::string shape = "[";
    for (std::size_t i = 0; i < s.shape.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(s.shape[i]);
      if (__builtin_mul_overflow(need, s.shape[i], &need)) need = -1;  // more than any file holds
    }
    if (need != off[1] - off[0])
      throw Error(where + ": " + std::to_string(off[1] - off[0]) + " bytes for its shape " + shape + "] and dtype " +
                  s.dtype + (need < 0 ? " (beyond 2^63 needed)" : " (" + std::to_string(need) + " needed)"));
    spans.emplace_back(off[0], off[1]);
    p.tensors.push_back(std::move(s));
  }
  // The data is covered exactly once, without holes (as the specification requires), before any
  // of it is copied: overlapping tensors would copy the file many times over.
  std::vector<std::pair<uint64_t, uint64_t>> sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  uint64_t at = 0;
  for (const auto& [b, e] : sorted) {
    if (b != at) throw Error(b < at ? "two tensors overlap in the data" : "the data has a hole no tensor covers");
    at = e;
  }
  if (at != data_size) throw Error("the data has " + std::to_string(data_size - at) + " bytes no tensor covers");
  for (std::size_t i = 0; i < spans.size(); ++i)
    p.tensors[i].data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at + spans[i].first),
                             bytes.begin() + static_cast<std::ptrdiff_t>(data_at + spans[i].second));
}

}  // namespace

PackedFileSize write_packed(const std::string& path, const compress::PackedModel& packed) {
  Json header = Json::object();
  header["__metadata__"] = {{"format", "gradscope-packed"}, {"gradscope_manifest", manifest_of(packed).dump()}};
  int64_t at = 0;
  for (const compress::StoredTensor& t : packed.tensors) {
    const int64_t end = at + static_cast<int64_t>(t.data.size());
    if (header.contains(t.name)) throw Error("write_packed: tensor '" + t.name + "' appears twice");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, end}}};
    at = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xffu);
  file += text;
  for (const compress::StoredTensor& t : packed.tensors) file.append(t.data.begin(), t.data.end());
  const std::filesystem::path target(path);
  try {
    internal::replace_file(target.has_parent_path() ? target.parent_path() : std::filesystem::path("."),
                           target.filename().string(), file);
  } catch (const Error& e) {
    throw Error("cannot write packed model '" + path + "': " + e.what());
  }
  PackedFileSize size;
  size.header_bytes = 8 + static_cast<int64_t>(text.size());
  size.data_bytes = at;
  size.file_bytes = static_cast<int64_t>(file.size());
  return size;
}

compress::PackedModel parse_packed(const std::string& bytes, const std::string& source) {
  compress::PackedModel p;
  try {
    parse_file(bytes, p);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  compress::check_packed(p, source);
  int64_t all = 0;
  for (const compress::StoredTensor& t : p.tensors) all += static_cast<int64_t>(t.data.size());
  for (const compress::PackedNode& n : p.nodes) p.node_bytes += n.bytes;  // checked: its parts' bytes
  for (const compress::PackedTable& t : p.tables) p.table_bytes += t.bytes;
  p.other_bytes = all - p.node_bytes - p.table_bytes;  // every tensor is a part or an entry
  return p;
}

compress::PackedModel read_packed(const std::string& path) {
  std::optional<std::string> bytes;
  try {
    bytes = internal::read_regular_file(path, kMaxFile);
  } catch (const Error& e) {
    throw Error("packed model '" + path + "': " + e.what());
  }
  if (!bytes) throw Error("packed model '" + path + "': no such file");
  return parse_packed(*bytes, "packed model '" + path + "'");
}

}  // namespace gradscope
