// A value inside a JSON document that a user may have edited or damaged, read with checks: each
// accessor checks the type and range before converting (no float-to-int cast of 1e300, no -1
// as a count), and each failure names the field by its path in the document
// ("gradscope_embedding_run.tables[1].profile.exposure.edges[2]: ...").
//
//   const Field root(doc);
//   const int64_t version = root.at("gradscope_embedding_run").at("version").count();
//   for (std::size_t i = 0; i < tables.size(); ++i) read_table(tables.element(i));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradscope::internal {

class Field {
 public:
  using Json = nlohmann::ordered_json;

  /// Rounding allowed at the ends of a range: the writer's own arithmetic (the Gini of equal
  /// counts, a Pearson coefficient of collinear series) may land a hair outside; damage does not.
  static constexpr double kRounding = 1e-9;

  /// `value` named `path`; the document itself has the empty path ("the document" in errors).
  /// `value` must outlive the Field and every Field taken from it.
  explicit Field(const Json& value, std::string path = "");

  const Json& json() const { return value_; }
  /// Where the value is in the document ("" for the document itself).
  const std::string& path() const { return path_; }
  /// Throws Error "<path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

  /// The member `key` of this object.
  Field at(const std::string& key) const;
  /// Whether this object has the member `key` (fields added by later versions are optional).
  bool has(const std::string& key) const;
  /// The members of this object, in the order written, with their keys.
  std::vector<std::pair<std::string, Field>> members() const;
  /// The number of elements of this array.
  std::size_t size() const;
  /// Element `i` of this array (i < size()).
  Field element(std::size_t i) const;

  /// An integer from 0 to 2^63 - 1, written as an integer (1.0 and 1e3 are not).
  int64_t count() const;
  /// An array of count()s.
  std::vector<int64_t> counts() const;
  /// A finite number; null (how the writer stores NaN and +-Inf) reads as NaN.
  double number() const;
  /// number() from `lo` to `hi` (kRounding outside is let through), or NaN for null.
  double number_in(double lo, double hi) const;
  /// number() of at least `lo` (kRounding below is let through), or NaN for null.
  double number_from(double lo) const;
  /// A finite number; null is not one.
  double finite() const;
  std::string string() const;

 private:
  const Json& value_;
  std::string path_;
};

/// `text` parsed in time linear in its size (internal/json_dom.h), refusing while it parses
/// nesting deeper than `max_depth` and objects of more than `max_members` members (Error
/// "malformed: ..."): a reader looks a key up in its object member by member. With
/// `unique_keys`, a key given twice in one object is refused too (Error naming the key) instead
/// of keeping its last value. Throws nlohmann's exceptions for text that is not JSON.
nlohmann::ordered_json parse_bounded(const std::string& text, int max_depth, std::size_t max_members,
                                     bool unique_keys = false);

/// What the JSON library said of text it could not parse, without its internal tag
/// ("[json.exception.parse_error.101] "): "parse error at line 1, column 2: ...".
std::string parser_message(const std::exception& e);

/// How a JSON value is shown in an error: numbers and null as written, other types by name
/// ("a string"), so that no long string or array is repeated in a message.
std::string shown(const nlohmann::ordered_json& value);

}  // namespace gradscope::internal
