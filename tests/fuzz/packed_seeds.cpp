// The packed_file seeds: the sample model (packed_sample.h) packed as every writer packs it
// (compress::pack and write_packed, which compress::save, save_weights, Python's save and
// `gradscope compress --packed` all go through): each precision, pruned units and their
// inputs, magnitude bitmaps, scales given by another rounding (GPTQ's), tables with every row
// level, one level or FP32 and pruned rows, and the plain safetensors file of save_weights.
// Then the hostile files of issue 41, each a written file edited: sizes that overflow, entries
// listed twice, a byte-order mark, NUL padding, scales and fallback rows that are not finite,
// parts declared with another dtype, overlapping tensors, a header of many tensors.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gradscope/core/compress/packed.h"
#include "gradscope/io/compress/packed_file.h"
#include "nlohmann/json.hpp"
#include "seeds.h"

namespace gradscope::fuzz {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using compress::Precision;

// The sample model's values (packed_sample.h's entries).
struct Sample {
  std::vector<float> w1, b1, w2, b2, item;
  int64_t count = 7;

  Sample() {
    for (int i = 0; i < 24; ++i) w1.push_back(std::sin(0.9f * static_cast<float>(i)) * (1 + i % 3));
    for (int i = 0; i < 6; ++i) b1.push_back(0.1f * static_cast<float>(i) - 0.2f);
    for (int i = 0; i < 18; ++i) w2.push_back(std::cos(0.4f * static_cast<float>(i)));
    b2 = {0.5f, -0.5f, 0.25f};
    for (int i = 0; i < 24; ++i) item.push_back(std::cos(0.7f * static_cast<float>(i)) * (1 + i % 5));
  }
  std::vector<compress::StateEntry> state() const {
    return {{"fc1.weight", "F32", {6, 4}, w1.data()}, {"fc1.bias", "F32", {6}, b1.data()},
            {"fc2.weight", "F32", {3, 6}, w2.data()}, {"fc2.bias", "F32", {3}, b2.data()},
            {"item.weight", "F32", {8, 3}, item.data()}, {"norm.count", "I64", {1}, &count}};
  }
};

// fc1 [6, 4] feeds fc2 [3, 6] (one input per unit), both at `p`; fc1 prunes `pruned`.
compress::Recipe recipe(Precision p, std::vector<int64_t> pruned = {}) {
  compress::Recipe r;
  compress::NodeDecision a, b;
  a.node = "fc1";
  a.weight_shape = {6, 4};
  a.bias = 6;
  a.next = "fc2";
  a.next_fan = 1;
  a.precision = p;
  a.pruned_units = std::move(pruned);
  b.node = "fc2";
  b.weight_shape = {3, 6};
  b.bias = 3;
  b.precision = p;
  r.nodes = {a, b};
  return r;
}

// item.weight [8, 3], row by row at `level` (merged rows share row 3).
compress::RowRecipe rows(const std::vector<uint8_t>& level) {
  compress::RowRecipe r;
  r.table = "item";
  r.rows = 8;
  r.dim = 3;
  r.level = level;
  r.merged_into.assign(8, -1);
  for (std::size_t i = 0; i < level.size(); ++i)
    if (level[i] == compress::kRowMerged) r.merged_into[i] = 3;
  r.fallback = {0.125, -0.25, 0.5};
  return r;
}

// A file's header (parsed) and data.
struct File {
  Json header;
  std::string data;
};

File split(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return {Json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string join(const std::string& header, const std::string& data) {
  std::string f(8, '\0');
  for (int i = 0; i < 8; ++i) f[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xffu);
  return f + header + data;
}

std::string join(const File& f) { return join(f.header.dump(), f.data); }

// `bytes` with its manifest's gradscope_packed object changed by `edit`.
std::string with_manifest(const std::string& bytes, const std::function<void(Json&)>& edit) {
  File f = split(bytes);
  Json m = Json::parse(f.header["__metadata__"]["gradscope_manifest"].get<std::string>());
  edit(m["gradscope_packed"]);
  f.header["__metadata__"]["gradscope_manifest"] = m.dump();
  return join(f);
}

// `bytes` with float `i` of tensor `name` set to `v`.
std::string with_float(const std::string& bytes, const std::string& name, int64_t i, float v) {
  File f = split(bytes);
  const int64_t at = f.header[name]["data_offsets"][0].get<int64_t>() + 4 * i;
  std::memcpy(&f.data[static_cast<std::size_t>(at)], &v, 4);
  return join(f);
}

// `bytes` with tensor `name` declared as `dtype`.
std::string with_dtype(const std::string& bytes, const std::string& name, const std::string& dtype) {
  File f = split(bytes);
  f.header[name]["dtype"] = dtype;
  return join(f);
}

}  // namespace

void write_packed_seeds(const std::filesystem::path& out) {
  const fs::path dir = out / "packed_file";
  fs::create_directories(dir);
  const Sample s;
  std::map<std::string, std::string> written;  // seed -> its bytes, for the hostile edits
  auto write = [&](const std::string& name, const compress::PackedModel& p) {
    write_packed((dir / name).string(), p);
    written[name] = read_bytes(dir / name);
  };
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4, Precision::kInt3,
                      Precision::kInt2})
    write(compress::precision_name(p), compress::pack(recipe(p), s.state()));
  write("pruned-int4", compress::pack(recipe(Precision::kInt4, {1, 4}), s.state()));
  write("pruned-fp16", compress::pack(recipe(Precision::kFp16, {0, 5}), s.state()));
  for (Precision p : {Precision::kInt8, Precision::kFp32}) {
    compress::Recipe r = recipe(p);
    r.magnitude_keep = 0.5;
    std::map<std::string, std::vector<uint8_t>> keep = {{"fc1", std::vector<uint8_t>(24)}, {"fc2", std::vector<uint8_t>(18)}};
    for (auto& [node, mask] : keep)
      for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 3 != 0;
    write(std::string("bitmap-") + compress::precision_name(p), compress::pack(r, s.state(), keep));
  }
  const std::map<std::string, std::vector<float>> given = {{"fc1", {0.5f, 0.25f, 1, 0, 2, 0.125f}},
                                                           {"fc2", {0.1f, 0.2f, 0.3f}}};
  write("given-scales-int4", compress::pack(recipe(Precision::kInt4), s.state(), {}, given));
  using namespace compress;
  const std::vector<uint8_t> every = {kRowFp32, kRowFp16, kRowInt8, kRowInt4, kRowPruned, kRowMerged, kRowInt3, kRowInt2};
  write("table-every-level", pack(recipe(Precision::kInt8), s.state(), {}, {}, {{"item.weight", rows(every)}}));
  write("table-uniform-int4",
        pack(recipe(Precision::kInt2), s.state(), {}, {}, {{"item.weight", rows(std::vector<uint8_t>(8, kRowInt4))}}));
  const std::vector<uint8_t> half = {kRowFp32, kRowPruned, kRowPruned, kRowFp32, kRowPruned, kRowFp32, kRowPruned, kRowPruned};
  write("table-fp32-pruned", pack(recipe(Precision::kFp16), s.state(), {}, {}, {{"item.weight", rows(half)}}));
  write("plain", pack(Recipe{}, s.state()));  // save_weights: every entry as it is
  write_seed(dir, "plain-foreign",
             join(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"BOOL","shape":[1,3],"data_offsets":[4,7]},"c":{"dtype":"F64","shape":[],)"
                  R"("data_offsets":[7,15]}})",
                  std::string("\x80\x3f\x00\x40\x01\x00\x01\x00\x00\x00\x00\x00\x00\xf0\x3f", 15)));

  // The hostile files of issue 41.
  const std::string& pruned = written["pruned-int4"];
  const std::string& table = written["table-every-level"];
  auto hostile = [&](const std::string& name, const std::string& bytes) { write_seed(dir, "hostile-" + name, bytes); };
  hostile("table-dim-2e62", with_manifest(table, [](Json& m) { m["tables"][0]["dim"] = int64_t{1} << 62; }));
  hostile("table-rows-x-dim", with_manifest(table, [](Json& m) { m["tables"][0]["dim"] = (int64_t{1} << 61) + 1; }));
  hostile("pruned-unit-twice", with_manifest(pruned, [](Json& m) { m["nodes"][0]["pruned_units"] = {1, 1, 4}; }));
  hostile("pruned-input-twice", with_manifest(pruned, [](Json& m) { m["nodes"][1]["pruned_inputs"] = {1, 1, 4}; }));
  hostile("node-twice", with_manifest(pruned, [](Json& m) { m["nodes"].push_back(m["nodes"][0]); }));
  hostile("table-twice", with_manifest(table, [](Json& m) { m["tables"].push_back(m["tables"][0]); }));
  hostile("level-twice", with_manifest(table, [](Json& m) { m["tables"][0]["levels"][1] = "fp32"; }));
  hostile("shape-1e9", with_manifest(pruned, [](Json& m) { m["nodes"][0]["weight_shape"] = {1000000000, 1}; }));
  hostile("shape-2e31", with_manifest(pruned, [](Json& m) {
            m["nodes"][1]["weight_shape"] = {int64_t{1} << 31, int64_t{1} << 31};
          }));
  const File f = split(written["int8"]);
  const std::string text = f.header.dump();
  hostile("tensor-twice", join(text.substr(0, text.size() - 1) + R"(,"norm.count":{"dtype":"U8","shape":[8],)" +
                                   R"("data_offsets":[)" + f.header["norm.count"]["data_offsets"][0].dump() + "," +
                                   f.header["norm.count"]["data_offsets"][1].dump() + "]}}",
                               f.data));
  hostile("bom", join("\xEF\xBB\xBF" + text, f.data));
  hostile("nul-padding", join(text + std::string(5, '\0'), f.data));
  const std::map<std::string, float> scales = {{"nan", NAN}, {"inf", INFINITY}, {"negative", -1}, {"3e38", 3e38f}};
  for (const auto& [what, v] : scales) hostile("scale-" + what, with_float(written["int8"], "fc1.weight.scales", 2, v));
  hostile("table-scale-nan", with_float(table, "item.weight.rows.int8.scales", 0, NAN));
  hostile("fallback-inf", with_float(table, "item.weight.rows.fallback", 1, -INFINITY));
  hostile("codes-i8", with_dtype(written["int4"], "fc1.weight.codes", "I8"));
  hostile("scales-i32", with_dtype(written["int4"], "fc1.weight.scales", "I32"));
  hostile("bias-bf16", with_dtype(written["int4"], "fc2.bias", "BF16"));
  hostile("mask-bool", with_dtype(written["bitmap-int8"], "fc1.weight.mask", "BOOL"));
  hostile("row-codes-i8", with_dtype(table, "item.weight.rows.codes", "I8"));
  hostile("plain-i32", with_dtype(written["plain"], "fc1.bias", "I32"));
  File overlap = split(written["plain"]);
  const int64_t b1 = overlap.header["fc1.bias"]["data_offsets"][0].get<int64_t>();
  overlap.header["fc2.bias"]["data_offsets"] = {b1, b1 + 12};  // inside fc1.bias, leaving a hole
  hostile("overlap", join(overlap));
  std::string many = "{";
  for (int i = 0; i < 5000; ++i)
    many += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" +
            std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  hostile("many-tensors", join(many + "}", std::string(5000, 'x')));
}

}  // namespace gradscope::fuzz
