#include "internal/json_field.h"

#include <cmath>
#include <limits>

#include "gradscope/core/error.h"
#include "internal/json_dom.h"

namespace gradscope::internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A range end as a reader writes it: 0, 1, 100, -1.
std::string bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The value as a count, or -1 when it is not an integer from 0 to 2^63 - 1. The parser keeps
// integers as written: non-negative ones unsigned, negative ones signed, anything with a
// fraction or an exponent (or beyond 2^64) as a double.
int64_t as_count(const nlohmann::ordered_json& value) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(v) : -1;
  }
  return value.is_number_integer() && value.get<int64_t>() >= 0 ? value.get<int64_t>() : -1;
}

}  // namespace

std::string shown(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::ordered_json::value_t::string: return "a string";
    case nlohmann::ordered_json::value_t::boolean: return "a boolean";
    case nlohmann::ordered_json::value_t::array: return "an array";
    case nlohmann::ordered_json::value_t::object: return "an object";
    case nlohmann::ordered_json::value_t::binary: return "binary data";
    default: return value.dump();  // a number or null; NaN and +-Inf dump as null
  }
}

namespace {

// JsonDom with parse_bounded's limits checked at each event.
class BoundedJson : public JsonDom {
 public:
  BoundedJson(Json& root, int max_depth, std::size_t max_members, bool unique_keys)
      : JsonDom(root), max_depth_(max_depth), max_members_(max_members), unique_keys_(unique_keys) {}
  bool start_object(std::size_t n) {
    enter();
    members_.push_back(0);
    return JsonDom::start_object(n);
  }
  bool start_array(std::size_t n) {
    enter();
    members_.push_back(0);
    return JsonDom::start_array(n);
  }
  bool key(Json::string_t& k) {
    if (++members_.back() > max_members_)
      throw Error("malformed: an object of more than " + std::to_string(max_members_) + " members");
    const std::string name = unique_keys_ ? k : std::string();  // the builder moves k
    JsonDom::key(k);
    if (unique_keys_ && repeated_key()) throw Error("the key '" + name + "' is given twice in one object");
    return true;
  }
  bool end_object() {
    members_.pop_back();
    return JsonDom::end_object();
  }
  bool end_array() {
    members_.pop_back();
    return JsonDom::end_array();
  }

 private:
  void enter() {
    // The document itself is depth 0, as nlohmann counts for its parse callbacks.
    if (static_cast<int>(members_.size()) + 1 > max_depth_)
      throw Error("malformed: nested more than " + std::to_string(max_depth_) + " deep");
  }
  int max_depth_;
  std::size_t max_members_;
  bool unique_keys_;
  std::vector<std::size_t> members_;  // keys so far of each open container (arrays: unused)
};

}  // namespace

nlohmann::ordered_json parse_bounded(const std::string& text, int max_depth, std::size_t max_members,
                                     bool unique_keys) {
  nlohmann::ordered_json doc;
  BoundedJson dom(doc, max_depth, max_members, unique_keys);
  nlohmann::ordered_json::sax_parse(text, &dom);
  return doc;
}

Field::Field(const Json& value, std::string path) : value_(value), path_(std::move(path)) {}

void Field::fail(const std::string& what) const {
  throw Error((path_.empty() ? std::string("the document") : path_) + ": " + what);
}

Field Field::at(const std::string& key) const {
  if (!value_.is_object()) fail("must be an object, got " + shown(value_));
  const std::string path = path_.empty() ? key : path_ + "." + key;
  const auto it = value_.find(key);
  if (it == value_.end()) Field(value_, path).fail("missing");
  return Field(*it, path);
}

bool Field::has(const std::string& key) const {
  if (!value_.is_object()) fail("must be an object, got " + shown(value_));
  return value_.find(key) != value_.end();
}

std::vector<std::pair<std::string, Field>> Field::members() const {
  if (!value_.is_object()) fail("must be an object, got " + shown(value_));
  std::vector<std::pair<std::string, Field>> out;
  for (const auto& [key, value] : value_.items()) out.emplace_back(key, Field(value, path_ + "." + key));
  return out;
}

std::size_t Field::size() const {
  if (!value_.is_array()) fail("must be an array, got " + shown(value_));
  return value_.size();
}

Field Field::element(std::size_t i) const {
  return Field(value_.at(i), path_ + "[" + std::to_string(i) + "]");
}

int64_t Field::count() const {
  const int64_t v = as_count(value_);
  if (v < 0) fail("must be an integer from 0 to 9223372036854775807, got " + shown(value_));
  return v;
}

std::vector<int64_t> Field::counts() const {
  std::vector<int64_t> out(size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = as_count(value_[i]);
    if (out[i] < 0) element(i).count();  // throws naming the element
  }
  return out;
}

double Field::number() const {
  if (value_.is_null()) return kNaN;
  if (!value_.is_number() || !std::isfinite(value_.get<double>()))
    fail("must be a number or null, got " + shown(value_));
  return value_.get<double>();
}

double Field::number_in(double lo, double hi) const {
  const double v = number();
  if (v < lo - kRounding || v > hi + kRounding)
    fail("must be from " + bound(lo) + " to " + bound(hi) + " or null, got " + shown(value_));
  return v;
}

double Field::number_from(double lo) const {
  const double v = number();
  if (v < lo - kRounding) fail("must be at least " + bound(lo) + " or null, got " + shown(value_));
  return v;
}

double Field::finite() const {
  if (!value_.is_number() || !std::isfinite(value_.get<double>()))
    fail("must be a finite number, got " + shown(value_));
  return value_.get<double>();
}

std::string Field::string() const {
  if (!value_.is_string()) fail("must be a string, got " + shown(value_));
  return value_.get<std::string>();
}

std::string parser_message(const std::exception& e) {
  // nlohmann's messages start with "[json.exception.<kind>.<id>] ".
  const std::string what = e.what();
  const auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

}  // namespace gradscope::internal
