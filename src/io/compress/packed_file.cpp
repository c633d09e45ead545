#include "gradscope/io/compress/packed_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gradscope/core/error.h"
#include "internal/regular_file.h"
#include "internal/side_file.h"

namespace gradscope {
namespace {

using Json = nlohmann::ordered_json;

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

std::vector<int64_t> int_list(const Json& j, const std::string& what) {
  if (!j.is_array()) throw Error(what + ": not a list");
  std::vector<int64_t> out;
  for (const Json& v : j) {
    if (!v.is_number_integer()) throw Error(what + ": not a list of integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

void read_manifest(const std::string& text, compress::PackedModel& p) {
  Json m;
  try {
    m = Json::parse(text);
  } catch (const std::exception& e) {
    throw Error(std::string("the manifest is not JSON: ") + e.what());
  }
  if (!m.is_object() || !m.contains("gradscope_packed") || !m["gradscope_packed"].is_object())
    throw Error("the manifest has no gradscope_packed object");
  const Json& g = m["gradscope_packed"];
  if (!g.contains("version") || g["version"] != 1) throw Error("manifest: version is not 1 (written by a newer gradscope?)");
  if (!g.contains("nodes") || !g["nodes"].is_array()) throw Error("manifest: nodes is not a list");
  for (std::size_t i = 0; i < g["nodes"].size(); ++i) {
    const Json& n = g["nodes"][i];
    const std::string where = "manifest: nodes[" + std::to_string(i) + "]";
    for (const char* key : {"node", "precision", "weight_shape", "bias", "pruned_units", "pruned_inputs", "bitmap", "bytes"})
      if (!n.is_object() || !n.contains(key)) throw Error(where + ": no " + key);
    if (!n["node"].is_string() || !n["precision"].is_string() || !n["bias"].is_boolean() || !n["bitmap"].is_boolean() ||
        !n["bytes"].is_number_integer())
      throw Error(where + ": a field has the wrong type");
    compress::PackedNode node;
    node.node = n["node"].get<std::string>();
    node.precision = compress::parse_precision(n["precision"].get<std::string>());
    node.weight_shape = int_list(n["weight_shape"], where + ".weight_shape");
    node.has_bias = n["bias"].get<bool>();
    node.pruned_units = int_list(n["pruned_units"], where + ".pruned_units");
    node.pruned_inputs = int_list(n["pruned_inputs"], where + ".pruned_inputs");
    node.bitmap = n["bitmap"].get<bool>();
    node.bytes = n["bytes"].get<int64_t>();
    for (int64_t d : node.weight_shape)
      if (d < 1) throw Error(where + ".weight_shape: a dimension < 1");
    p.nodes.push_back(std::move(node));
  }
  if (!g.contains("tables")) return;  // written before tables were packed
  if (!g["tables"].is_array()) throw Error("manifest: tables is not a list");
  for (std::size_t i = 0; i < g["tables"].size(); ++i) {
    const Json& t = g["tables"][i];
    const std::string where = "manifest: tables[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("rows") ||
        !t["rows"].is_number_integer() || !t.contains("dim") || !t["dim"].is_number_integer() || !t.contains("levels") ||
        !t["levels"].is_array() || !t.contains("bytes") || !t["bytes"].is_number_integer())
      throw Error(where + ": needs name, rows, dim, levels and bytes");
    compress::PackedTable table;
    table.name = t["name"].get<std::string>();
    table.rows = t["rows"].get<int64_t>();
    table.dim = t["dim"].get<int64_t>();
    table.bytes = t["bytes"].get<int64_t>();
    for (const Json& l : t["levels"]) {
      uint8_t k = 0;
      while (k < compress::kRowLevels && !(l.is_string() && l.get<std::string>() == compress::row_level_name(k))) ++k;
      if (k == compress::kRowLevels)
        throw Error(where + ".levels: " + l.dump() + " is not fp32, fp16, int8, int4, int3, int2, pruned or merged");
      table.levels.push_back(k);
    }
    p.tables.push_back(std::move(table));
  }
}

void parse_file(const std::string& bytes, compress::PackedModel& p) {
  if (bytes.size() < 8) throw Error("too short for a safetensors file (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (n > static_cast<uint64_t>(kMaxHeader) || n > bytes.size() - 8)
    throw Error("header length " + std::to_string(n) + " is beyond the file or the 100 MB limit");
  Json header;
  try {
    header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const std::exception& e) {
    throw Error(std::string("the header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw Error("the header is not a JSON object");
  const std::size_t data_at = 8 + static_cast<std::size_t>(n);
  const uint64_t data_size = bytes.size() - data_at;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") {
      if (!t.is_object()) throw Error("__metadata__ is not an object");
      if (t.contains("gradscope_manifest")) {
        if (!t["gradscope_manifest"].is_string()) throw Error("__metadata__.gradscope_manifest is not a string");
        read_manifest(t["gradscope_manifest"].get<std::string>(), p);
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets") ||
        !t["dtype"].is_string())
      throw Error(where + ": needs dtype, shape and data_offsets");
    compress::StoredTensor s;
    s.name = name;
    s.dtype = t["dtype"].get<std::string>();
    s.shape = int_list(t["shape"], where + ": shape");
    const std::vector<int64_t> off = int_list(t["data_offsets"], where + ": data_offsets");
    if (off.size() != 2 || off[0] < 0 || off[1] < off[0] || static_cast<uint64_t>(off[1]) > data_size)
      throw Error(where + ": data_offsets outside the " + std::to_string(data_size) + " bytes of data");
    int64_t count = 1;
    for (int64_t d : s.shape) {
      if (d < 0) throw Error(where + ": a negative dimension");
      count *= d;
    }
    if (count * compress::stored_dtype_size(s.dtype) != off[1] - off[0])
      throw Error(where + ": " + std::to_string(off[1] - off[0]) + " bytes for its shape and dtype " + s.dtype);
    s.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at + static_cast<std::size_t>(off[0])),
                  bytes.begin() + static_cast<std::ptrdiff_t>(data_at + static_cast<std::size_t>(off[1])));
    spans.emplace_back(off[0], off[1]);
    p.tensors.push_back(std::move(s));
  }
  // The data is covered exactly once, without holes (as the specification requires).
  std::sort(spans.begin(), spans.end());
  uint64_t at = 0;
  for (const auto& [b, e] : spans) {
    if (b != at) throw Error(b < at ? "two tensors overlap in the data" : "the data has a hole no tensor covers");
    at = e;
  }
  if (at != data_size) throw Error("the data has " + std::to_string(data_size - at) + " bytes no tensor covers");
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

compress::PackedModel read_packed(const std::string& path) {
  std::optional<std::string> bytes;
  try {
    bytes = internal::read_regular_file(path, kMaxFile);
  } catch (const Error& e) {
    throw Error("packed model '" + path + "': " + e.what());
  }
  if (!bytes) throw Error("packed model '" + path + "': no such file");
  compress::PackedModel p;
  try {
    parse_file(*bytes, p);
  } catch (const Error& e) {
    throw Error("packed model '" + path + "': " + e.what());
  }
  for (const compress::PackedNode& n : p.nodes) p.node_bytes += n.bytes;
  for (const compress::PackedTable& t : p.tables) p.table_bytes += t.bytes;
  for (const compress::StoredTensor& t : p.tensors) {
    const bool part = std::any_of(p.nodes.begin(), p.nodes.end(), [&](const compress::PackedNode& n) {
      return t.name.rfind(n.node + ".weight", 0) == 0 || t.name == n.node + ".bias";
    }) || std::any_of(p.tables.begin(), p.tables.end(), [&](const compress::PackedTable& x) {
      return t.name.rfind(x.name + ".rows.", 0) == 0;
    });
    if (!part) p.other_bytes += static_cast<int64_t>(t.data.size());
  }
  return p;
}

}  // namespace gradscope
