#include "internal/model_json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

#include "gradscope/core/error.h"
#include "internal/packed_numbers.h"

namespace gradscope::trees_internal {
namespace {

// Objects in model files hold at most one member per feature (LightGBM's
// feature_importances); 100000 bounds what a hostile file can make ordered lookups cost.
constexpr std::size_t kMaxMembers = 100000;

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error
// ..." as "line 1, column 9: syntax error ...".
std::string parse_message(const std::string& what) {
  std::string m = what;
  const auto tag = m.find("] ");
  if (tag != std::string::npos) m = m.substr(tag + 2);
  const std::string lead = "parse error at ";
  if (m.compare(0, lead.size(), lead) == 0) m = m.substr(lead.size());
  return m;
}

// Where byte `byte` (1-based, as nlohmann counts) of the parsed text lies in `original`:
// each of `quoted` (offsets in `original`, increasing) added two quote marks before it.
std::string position(const std::string& original, const std::vector<std::size_t>& quoted,
                     std::size_t byte) {
  std::size_t added = 0;
  for (std::size_t i = 0; i < quoted.size() && quoted[i] + 2 * i < byte; ++i) added += 2;
  const std::size_t at = std::min(byte - std::min(byte, added), original.size());
  const std::size_t line =
      1 + static_cast<std::size_t>(std::count(
              original.begin(), original.begin() + static_cast<std::ptrdiff_t>(at > 0 ? at - 1 : 0),
              '\n'));
  const std::size_t newline = at > 1 ? original.rfind('\n', at - 2) : std::string::npos;
  const std::size_t column = newline == std::string::npos ? at : at - 1 - newline;
  return "byte " + std::to_string(at) + " (line " + std::to_string(line) + ", column " +
         std::to_string(column) + ")";
}

// `parsed` parsed, with positions in errors given in `original` (see position()).
Json parse_json(const std::string& parsed, int max_depth, const std::string& original,
                const std::vector<std::size_t>& quoted) {
  try {
    return internal::parse_bounded(parsed, max_depth, kMaxMembers);
  } catch (const Json::parse_error& e) {
    // "line 1, column 9: syntax error ...": the position is recomputed in the original text.
    const std::string m = parse_message(e.what());
    const auto colon = m.find(": ");
    throw Error(position(original, quoted, e.byte) +
                ": malformed JSON: " + (colon == std::string::npos ? m : m.substr(colon + 2)));
  } catch (const Json::exception& e) {
    throw Error("malformed JSON: " + parse_message(e.what()));
  }
}

}  // namespace

Json parse_model_json(const std::string& text, int max_depth) {
  return parse_json(text, max_depth, text, {});
}

std::string quote_nonfinite(const std::string& text, std::vector<std::size_t>& quoted) {
  static const std::string_view kWords[] = {"NaN", "Infinity", "-Infinity"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\' && i + 1 < text.size()) {
        out += c;
        out += text[++i];
        continue;
      }
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == 'N' || c == 'I' || c == '-') {
      const std::string_view rest(text.data() + i, text.size() - i);
      const auto word = std::find_if(std::begin(kWords), std::end(kWords), [&](std::string_view w) {
        return rest.substr(0, w.size()) == w;
      });
      if (word != std::end(kWords)) {
        quoted.push_back(i);
        out += '"';
        out += *word;
        out += '"';
        i += word->size() - 1;
        continue;
      }
    }
    out += c;
  }
  return out;
}

Json parse_xgboost_model_json(const std::string& text, int max_depth) {
  std::vector<std::size_t> quoted;
  const std::string json = quote_nonfinite(text, quoted);
  return parse_json(json, max_depth, text, quoted);
}

double number_or_nonfinite(const Field& f) {
  if (f.json().is_number()) return f.json().get<double>();
  if (f.json().is_string()) {
    const std::string s = f.json().get<std::string>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  f.fail("must be a number, NaN or Infinity, got " + internal::shown(f.json()));
}

double number_or_string(const Field& f) {
  if (!f.json().is_string()) return f.finite();
  const std::string s = f.json().get<std::string>();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    f.fail("must be a finite number, got \"" + s.substr(0, 32) + "\"");
  return v;
}

int32_t index_or_string(const Field& f) {
  int64_t v = -1;
  if (f.json().is_string()) {
    const std::string s = f.json().get<std::string>();
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) v = x;
  } else if (f.json().is_number_integer()) {
    v = f.json().is_number_unsigned() && f.json().get<uint64_t>() > INT32_MAX
            ? -1
            : f.json().get<int64_t>();
  }
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    f.fail("must be an integer from 0 to 2147483647, got " +
           (f.json().is_string() ? "\"" + f.json().get<std::string>().substr(0, 32) + "\""
                                 : internal::shown(f.json())));
  return static_cast<int32_t>(v);
}

int32_t int32(const Field& f) {
  const Json& j = f.json();
  const bool ok =
      j.is_number_integer() &&
      (j.is_number_unsigned() ? j.get<uint64_t>() <= INT32_MAX
                              : j.get<int64_t>() >= INT32_MIN && j.get<int64_t>() <= INT32_MAX);
  if (!ok) f.fail("must be an integer from -2147483648 to 2147483647, got " + internal::shown(j));
  return static_cast<int32_t>(j.get<int64_t>());
}

std::vector<double> numbers(const Field& f) {
  std::vector<double> out(f.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Json& v = f.json()[i];
    if (v.is_number())
      out[i] = v.get<double>();
    else
      f.element(i).finite();  // throws naming the element
  }
  return out;
}

namespace {

// The elements of `f`: `fast` takes the value straight from the JSON when it is what is
// expected; otherwise `slow` reads the element's Field, which names it when it throws.
// A packed array (packed_numbers.h) gives each element as the JSON number it was.
template <class T, class Fast, class Slow>
std::vector<T> array_of(const Field& f, Fast fast, Slow slow) {
  const std::size_t n = array_size(f);
  std::vector<T> out(n);
  if (is_packed(f.json())) {
    for (std::size_t i = 0; i < n; ++i) {
      const Json v = packed_element(f.json(), i);
      if (!fast(v, out[i])) out[i] = slow(Field(v, f.path() + "[" + std::to_string(i) + "]"));
    }
    return out;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!fast(f.json()[i], out[i])) out[i] = slow(f.element(i));
  return out;
}

// `v` as an integer from `lo` to INT32_MAX, when it is one.
bool int_from(const Json& v, int64_t lo, int32_t& out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > INT32_MAX) return false;
    out = static_cast<int32_t>(v.get<uint64_t>());
    return true;
  }
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > INT32_MAX) return false;
  out = static_cast<int32_t>(v.get<int64_t>());
  return true;
}

}  // namespace

std::size_t array_size(const Field& f) {
  return is_packed(f.json()) ? packed_size(f.json()) : f.size();
}

void fail_element(const Field& f, std::size_t i, const std::string& what) {
  throw Error(f.path() + "[" + std::to_string(i) + "]: " + what);
}

std::vector<int32_t> int32_array(const Field& f) {
  return array_of<int32_t>(
      f, [](const Json& v, int32_t& out) { return int_from(v, INT32_MIN, out); }, int32);
}

std::vector<int32_t> index_array(const Field& f) {
  return array_of<int32_t>(
      f, [](const Json& v, int32_t& out) { return int_from(v, 0, out); }, index_or_string);
}

std::vector<double> nonfinite_array(const Field& f) {
  return array_of<double>(
      f,
      [](const Json& v, double& out) {
        if (!v.is_number()) return false;
        out = v.get<double>();
        return true;
      },
      number_or_nonfinite);
}

int32_t checked_outputs(const Field& f, int64_t count) {
  if (count > kMaxTreeOutputs)
    f.fail(std::to_string(count) + " outputs, above the limit of " +
           std::to_string(kMaxTreeOutputs));
  return static_cast<int32_t>(count);
}

int32_t checked_features(const Field& f, int64_t count) {
  if (count > kMaxTreeFeatures)
    f.fail(std::to_string(count) + " features, above the limit of " +
           std::to_string(kMaxTreeFeatures));
  return static_cast<int32_t>(count);
}

void rethrow_in_model(const char* format, const std::string& name, const std::exception& e) {
  std::string what = e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e))
    what = "out of memory";
  else if (dynamic_cast<const Json::exception*>(&e))
    what = "malformed: " + parse_message(what);
  throw Error(std::string(format) + " model '" + name + "': " + what);
}

}  // namespace gradscope::trees_internal
