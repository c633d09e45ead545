#include "internal/ubjson.h"

#include <algorithm>

#include "gradscope/core/error.h"
#include "internal/json_dom.h"
#include "internal/packed_numbers.h"

namespace gradscope::trees_internal {
namespace {

constexpr std::size_t kMaxMembers = 100000;                     // as parse_model_json
constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);  // a container without a count

// The linear-time DOM builder (internal/json_dom.h), with the bounds of parse_ubjson checked at every event, the members
// named in `skip` (at any depth) left out of the document, and the arrays of numbers named in
// `pack` kept as one packed value each (packed_numbers.h).
class BoundedDom {
 public:
  using Dom = internal::JsonDom;
  BoundedDom(Json& result, std::size_t max_values, int max_depth,
             const std::vector<std::string>& skip, const std::vector<std::string>& pack)
      : dom_(result),
        max_values_(max_values),
        max_depth_(max_depth),
        skip_(skip),
        pack_(pack) {}

  bool null() { return value() && not_number() && (drop() || dom_.null()); }
  bool boolean(bool v) { return value() && not_number() && (drop() || dom_.boolean(v)); }
  bool number_integer(Json::number_integer_t v) {
    PackedNumber n;
    n.integer = v;
    return value() && (packed(n) || drop() || dom_.number_integer(v));
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    PackedNumber n;
    n.kind = PackedNumber::Kind::kUnsigned;
    n.unsigned_integer = v;
    return value() && (packed(n) || drop() || dom_.number_unsigned(v));
  }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    PackedNumber n;
    n.kind = PackedNumber::Kind::kFloat;
    n.floating = v;
    return value() && (packed(n) || drop() || dom_.number_float(v, s));
  }
  bool string(Json::string_t& v) { return value() && not_number() && (drop() || dom_.string(v)); }
  bool binary(Json::binary_t& v) { return value() && not_number() && (drop() || dom_.binary(v)); }
  bool start_object(std::size_t n) {
    if (n != kUnknown && n > kMaxMembers) too_many_members();
    members_.push_back(0);
    return open(n) && not_number() && (enter_dropped() || dom_.start_object(n));
  }
  bool key(Json::string_t& k) {
    if (++members_.back() > kMaxMembers) too_many_members();
    if (dropping_ > 0) return true;
    if (std::find(skip_.begin(), skip_.end(), k) != skip_.end()) {
      drop_next_ = true;
      return true;
    }
    pack_next_ = std::find(pack_.begin(), pack_.end(), k) != pack_.end();
    return dom_.key(k);
  }
  bool end_object() {
    members_.pop_back();
    --depth_;
    return leave_dropped() || dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (!open(n) || !unpack()) return false;
    if (enter_dropped()) return true;
    if (pack_next_) {  // a named array: its numbers go to `packing_` until it ends
      pack_next_ = false;
      packing_ = true;
      numbers_.clear();
      if (n != kUnknown) numbers_.reserve(n);
      return true;
    }
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    if (leave_dropped()) return true;
    if (packing_) {
      packing_ = false;
      Json::binary_t bytes = std::move(pack_numbers(numbers_).get_binary());
      return dom_.binary(bytes);
    }
    return dom_.end_array();
  }
  // "[json.exception.parse_error.110] parse error at byte 5: syntax error while parsing
  // UBJSON value: unexpected end of input" -> "byte 5: malformed UBJSON: value: unexpected..."
  // (the byte past the end, for input that ends early, is given as the last one).
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    std::string m = e.what();
    const std::string lead = "while parsing UBJSON ";
    const auto at = m.find(lead);
    m = at == std::string::npos ? m.substr(m.find("] ") + 2) : m.substr(at + lead.size());
    throw Error("byte " + std::to_string(std::min(position, max_values_)) +
                ": malformed UBJSON: " + m);
  }

 private:
  [[noreturn]] static void too_many_members() {
    throw Error("malformed: an object of more than " + std::to_string(kMaxMembers) + " members");
  }
  // A number of an array being packed: kept there instead of in the document.
  bool packed(const PackedNumber& n) {
    if (!packing_) {
      pack_next_ = false;  // a packed key's value that is a number, not an array
      return false;
    }
    numbers_.push_back(n);
    return true;
  }
  // A value that is neither a number nor an array: a packed key's value is not an array of
  // numbers after all.
  bool not_number() {
    pack_next_ = false;
    return unpack();
  }
  // Anything but a number inside an array being packed: it is built as an array after all,
  // with the numbers seen so far first.
  bool unpack() {
    if (!packing_) return true;
    packing_ = false;
    if (!dom_.start_array(kUnknown)) return false;
    for (const PackedNumber& n : numbers_) {
      switch (n.kind) {
        case PackedNumber::Kind::kInteger:
          dom_.number_integer(n.integer);
          break;
        case PackedNumber::Kind::kUnsigned:
          dom_.number_unsigned(n.unsigned_integer);
          break;
        case PackedNumber::Kind::kFloat:
          dom_.number_float(n.floating, {});
          break;
      }
    }
    return true;
  }
  bool value() {
    if (++values_ > max_values_)
      throw Error("malformed: more values than the " + std::to_string(max_values_) +
                  " bytes could hold");
    return true;
  }
  bool open(std::size_t n) {
    if (++depth_ > max_depth_)
      throw Error("malformed: nested more than " + std::to_string(max_depth_) + " deep");
    if (n != kUnknown && n > max_values_)
      throw Error("malformed: a container of " + std::to_string(n) + " elements in " +
                  std::to_string(max_values_) + " bytes");
    return value();
  }
  // A scalar that is (part of) a skipped member: true, and it is not built.
  bool drop() {
    if (!drop_next_) return dropping_ > 0;
    drop_next_ = false;
    return true;
  }
  // A container that is (inside) a skipped member: true, and the depth inside it grows.
  bool enter_dropped() {
    if (drop_next_ || dropping_ > 0) {
      drop_next_ = false;
      ++dropping_;
      return true;
    }
    return false;
  }
  bool leave_dropped() {
    if (dropping_ == 0) return false;
    --dropping_;
    return true;
  }

  Dom dom_;
  std::size_t values_ = 0, max_values_;
  int depth_ = 0, max_depth_;
  std::vector<std::size_t> members_;
  const std::vector<std::string>& skip_;
  const std::vector<std::string>& pack_;
  bool drop_next_ = false;  // the value of a skipped key comes next
  bool pack_next_ = false;  // the value of a packed key comes next
  bool packing_ = false;    // inside an array being packed
  std::vector<PackedNumber> numbers_;
  int dropping_ = 0;  // containers open inside a skipped value
};

}  // namespace

Json parse_ubjson(const std::string& bytes, int max_depth, const std::vector<std::string>& skip,
                  const std::vector<std::string>& pack) {
  Json result;
  BoundedDom sax(result, bytes.size(), max_depth, skip, pack);
  try {
    Json::sax_parse(bytes, &sax, nlohmann::detail::input_format_t::ubjson, true);
  } catch (const Json::exception& e) {
    throw Error(std::string("malformed UBJSON: ") + e.what());
  }
  return result;
}

}  // namespace gradscope::trees_internal
