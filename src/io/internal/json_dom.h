// Builds an ordered JSON document from the parser's events (nlohmann's SAX interface) in time
// linear in its size, whatever the input. nlohmann's own builders are not: ordered_map inserts
// each key after comparing it with every earlier key of its object, and the builder that
// takes a callback scans the whole enclosing container at the end of every object; both are
// quadratic (an object of 99,000 members took 7 s, an array of 200,000 small objects 5 s).
// A key given twice keeps its first place and its last value, as nlohmann's builders do
// (repeated_key() says when the last key was one; parse_bounded can refuse it).
//
//   nlohmann::ordered_json doc;
//   JsonDom dom(doc);
//   nlohmann::ordered_json::sax_parse(text, &dom);
#pragma once

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradscope::internal {

class JsonDom {
 public:
  using Json = nlohmann::ordered_json;

  explicit JsonDom(Json& root) : root_(root) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(Json(v)); }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) {
    Json bytes = Json::binary(std::move(static_cast<Json::binary_t::container_type&>(v)));
    if (v.has_subtype()) bytes.get_binary().set_subtype(v.subtype());
    return put(std::move(bytes));
  }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t& k);

  /// Rethrows the parser's exception as it is (a parse_error keeps its byte position).
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    throw e;
  }

 protected:
  /// Whether the last key() was already a member of its object.
  bool repeated_key() const { return repeated_key_; }

 private:
  // An object's members as ordered_map keeps them: a vector of (key, value) pairs.
  using Members = std::vector<std::pair<const std::string, Json>>;
  // Objects up to this size are searched member by member; larger ones get a hash index.
  static constexpr std::size_t kIndexedFrom = 16;

  struct Open {
    Json* value;
    std::unordered_map<std::string, std::size_t> index;  // key -> member, for large objects
  };

  bool put(Json&& v) { return place(std::move(v)) != nullptr; }
  Json* place(Json&& v);
  bool open(Json&& container) {
    Json* at = place(std::move(container));
    open_.push_back({at, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Open> open_;
  Json* slot_ = nullptr;  // where the value after a key goes
  bool repeated_key_ = false;
};

inline JsonDom::Json* JsonDom::place(Json&& v) {
  if (open_.empty()) {
    root_ = std::move(v);
    return &root_;
  }
  Json& top = *open_.back().value;
  if (top.is_array()) {
    auto& elements = top.get_ref<Json::array_t&>();
    elements.push_back(std::move(v));
    return &elements.back();
  }
  *slot_ = std::move(v);
  return slot_;
}

inline bool JsonDom::key(Json::string_t& k) {
  Open& o = open_.back();
  Members& members = o.value->get_ref<Json::object_t&>();
  repeated_key_ = true;
  if (o.index.empty()) {
    for (auto& [name, value] : members)
      if (name == k) {
        slot_ = &value;
        return true;
      }
    if (members.size() + 1 >= kIndexedFrom)
      for (std::size_t i = 0; i < members.size(); ++i) o.index.emplace(members[i].first, i);
  } else {
    const auto known = o.index.find(k);
    if (known != o.index.end()) {
      slot_ = &members[known->second].second;
      return true;
    }
  }
  repeated_key_ = false;
  if (!o.index.empty() || members.size() + 1 >= kIndexedFrom) o.index.emplace(k, members.size());
  if (members.size() == members.capacity()) {
    // The vector would copy its members to grow (a pair with a const key cannot be moved), a
    // whole subtree each: the values are moved here, only the keys copied.
    Members grown;
    grown.reserve(std::max<std::size_t>(4, 2 * members.size()));
    for (auto& [name, value] : members)
      grown.emplace_back(std::piecewise_construct, std::forward_as_tuple(name), std::forward_as_tuple(std::move(value)));
    members.swap(grown);
  }
  members.emplace_back(std::move(k), nullptr);
  slot_ = &members.back().second;
  return true;
}

}  // namespace gradscope::internal
