// What the JSON model readers share: parsing with byte positions in errors, numbers that
// XGBoost stores as strings, and the "<format> model '<name>': " prefix on every error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/trees/model.h"
#include "internal/json_field.h"

namespace gradscope::trees_internal {

using Field = internal::Field;
using Json = internal::Field::Json;

/// `text` parsed; text that is not JSON is an Error "byte N (line L, column C): malformed
/// JSON: ..." and nesting deeper than `max_depth` (or an object of more than 100000 members,
/// which ordered JSON looks up one by one) an Error "malformed: ...".
Json parse_model_json(const std::string& text, int max_depth);

/// XGBoost writes NaN and +-Infinity as bare words (a categorical split's split_condition is
/// NaN) and reads them back; standard JSON has no such values. Returns `text` with each of
/// them outside strings put in quotes ("NaN", "Infinity", "-Infinity"), and appends its
/// offset in `text` to `quoted`.
std::string quote_nonfinite(const std::string& text, std::vector<std::size_t>& quoted);
/// parse_model_json of quote_nonfinite(text), errors giving positions in `text`.
Json parse_xgboost_model_json(const std::string& text, int max_depth);
/// A JSON number, or one of the strings quote_nonfinite makes (NaN, +-infinity).
double number_or_nonfinite(const Field& f);

/// A finite number written as a JSON number or as a string ("5E-1", as XGBoost writes them).
double number_or_string(const Field& f);
/// An integer from 0 to 2^31 - 1 written as a JSON integer or as a string ("200").
int32_t index_or_string(const Field& f);
/// An integer from -2^31 to 2^31 - 1 written as a JSON integer (child ids; -1 is "none").
int32_t int32(const Field& f);
/// The elements of an array of numbers (JSON numbers; null and strings are errors).
std::vector<double> numbers(const Field& f);

/// The elements of an array as int32 (JSON integers), as indexes (index_or_string) or as
/// numbers (number_or_nonfinite), in one pass over the values: the Field of an element, and
/// the path in it, is made only for an element that is wrong, to name it in the error.
std::vector<int32_t> int32_array(const Field& f);
/// The elements of an array, or of a packed one (packed_numbers.h).
std::size_t array_size(const Field& f);
/// Throws Error "<path of f>[i]: <what>", for an array or a packed one.
[[noreturn]] void fail_element(const Field& f, std::size_t i, const std::string& what);
std::vector<int32_t> index_array(const Field& f);
std::vector<double> nonfinite_array(const Field& f);

/// `count`, the outputs (classes) `f` gives, when at most kMaxTreeOutputs; else Error
/// "<path>: N outputs, above the limit of 65536". Readers check before sizing by it.
int32_t checked_outputs(const Field& f, int64_t count);
/// `count`, the features `f` gives, when at most kMaxTreeFeatures; else Error "<path>: N
/// features, above the limit of 67108864".
int32_t checked_features(const Field& f, int64_t count);

/// Throws Error "<format> model '<name>': <what e says>", where an allocation failure says "out
/// of memory" and a JSON library exception loses its internal tag.
[[noreturn]] void rethrow_in_model(const char* format, const std::string& name,
                                   const std::exception& e);

/// Runs `parse`, turning any exception into "<format> model '<name>': <its message>".
template <class Parse>
auto with_model_context(const char* format, const std::string& name, Parse&& parse)
    -> decltype(parse()) {
  try {
    return parse();
  } catch (const std::exception& e) {
    rethrow_in_model(format, name, e);
  }
}

}  // namespace gradscope::trees_internal
