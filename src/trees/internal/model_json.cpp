#include "internal/model_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

#include "gradscope/core/error.h"

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

}  // namespace

Json parse_model_json(const std::string& text, int max_depth) {
  try {
    return internal::parse_bounded(text, max_depth, kMaxMembers);
  } catch (const Json::parse_error& e) {
    std::string m = parse_message(e.what());
    const auto colon = m.find(": ");
    const std::string where =
        colon == std::string::npos ? std::string() : " (" + m.substr(0, colon) + ")";
    throw Error("byte " + std::to_string(e.byte) + where +
                ": malformed JSON: " + (colon == std::string::npos ? m : m.substr(colon + 2)));
  } catch (const Json::exception& e) {
    throw Error("malformed JSON: " + parse_message(e.what()));
  }
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

void rethrow_in_model(const char* format, const std::string& name, const std::exception& e) {
  std::string what = e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e))
    what = "out of memory";
  else if (dynamic_cast<const Json::exception*>(&e))
    what = "malformed: " + parse_message(what);
  throw Error(std::string(format) + " model '" + name + "': " + what);
}

}  // namespace gradscope::trees_internal
