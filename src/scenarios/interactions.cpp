#include "interactions.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "digits.h"
#include "gradscope/core/error.h"

namespace gradscope::scenarios {
namespace {

// One positive; user and item already numbered densely.
struct Positive {
  int64_t user, item;
  double time;
};

// Numbers ids densely in order of first appearance.
class Numbering {
 public:
  int64_t operator()(int64_t id) { return ids_.emplace(id, ids_.size()).first->second; }
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }

 private:
  std::map<int64_t, int64_t> ids_;
};

// Leave-one-out over each user's items in time order: the latest is held out when the user
// has at least two; the others train.
void hold_out_latest(const std::vector<std::vector<int64_t>>& items_by_user, Interactions& d) {
  d.seen.assign(d.users, {});
  for (int64_t u = 0; u < d.users; ++u) {
    const std::vector<int64_t>& items = items_by_user[u];
    const bool held_out = items.size() >= 2;
    for (std::size_t k = 0; k + (held_out ? 1 : 0) < items.size(); ++k) {
      d.train.emplace_back(u, items[k]);
      d.seen[u].push_back(items[k]);
    }
    if (held_out) d.test_user.push_back(u), d.test_item.push_back(items.back());
  }
}

// Per user, positives in time order (ties keep file order), then leave-one-out.
void split(const std::vector<Positive>& positives, Interactions& d) {
  std::vector<std::vector<Positive>> by_user(d.users);
  for (const Positive& p : positives) by_user[p.user].push_back(p);
  std::vector<std::vector<int64_t>> items(d.users);
  for (int64_t u = 0; u < d.users; ++u) {
    auto& v = by_user[u];
    std::stable_sort(v.begin(), v.end(), [](const Positive& a, const Positive& b) { return a.time < b.time; });
    for (const Positive& p : v) items[u].push_back(p.item);
  }
  hold_out_latest(items, d);
}

// A threshold as people write it: 4, 8, 4.5.
std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// The split data; Error `none` when there is no positive.
Interactions make(const char* name, const std::string& description, const Numbering& users,
                  const Numbering& items, const std::vector<Positive>& positives, const std::string& none) {
  if (positives.empty()) throw Error(none);
  Interactions d;
  d.name = name;
  d.description = description;
  d.users = users.size();
  d.items = items.size();
  split(positives, d);
  return d;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

Interactions load_movielens(const std::string& path, double min_rating) {
  std::ifstream in(path);
  if (!in)
    throw Error("cannot open movielens data '" + path + "': " + std::strerror(errno) +
                " (run scripts/fetch-data.sh movielens)");
  const std::string where = "movielens data '" + path + "' line ";
  std::string line;
  if (!std::getline(in, line) || trim(line.substr(0, line.find(','))) != "userId")
    throw Error(where + "1: expected the header userId,movieId,rating,timestamp");
  Numbering users, items;
  std::vector<Positive> positives;
  for (int64_t row = 2; std::getline(in, line); ++row) {
    if (trim(line).empty()) continue;
    std::stringstream fields(line);
    std::string f[5];
    int n = 0;
    while (n < 5 && std::getline(fields, f[n], ',')) ++n;
    if (n != 4)
      throw Error(where + std::to_string(row) + ": expected 4 fields (userId,movieId,rating,timestamp), found " +
                  (n == 5 ? "more" : std::to_string(n)));
    double v[4];
    for (int k = 0; k < 4; ++k) {
      const std::string field = trim(f[k]);
      char* end = nullptr;
      v[k] = std::strtod(field.c_str(), &end);
      if (field.empty() || *end != '\0' || (k < 2 && v[k] != static_cast<double>(static_cast<int64_t>(v[k]))))
        throw Error(where + std::to_string(row) + ": '" + field + "' is not " + (k < 2 ? "an id" : "a number"));
    }
    if (v[2] < min_rating) continue;
    const int64_t u = users(static_cast<int64_t>(v[0]));
    const int64_t i = items(static_cast<int64_t>(v[1]));
    positives.push_back({u, i, v[3]});
  }
  return make("movielens", "MovieLens ratings (r-cran-dslabs), a positive is a rating >= " + number(min_rating),
              users, items, positives, "movielens data '" + path + "': no rating >= " + number(min_rating));
}

Interactions digits_pixel_interactions(const std::string& digits_csv, double threshold, uint64_t seed) {
  const cli::DigitsCsv csv = cli::read_digits_csv(digits_csv);
  constexpr int64_t kPixels = 64;
  Numbering users, items;
  std::vector<Positive> positives;
  std::mt19937_64 gen(seed);  // the raw engine output is the same on every standard library
  const auto images = static_cast<int64_t>(csv.labels.size());
  for (int64_t image = 0; image < images; ++image)
    for (int64_t pixel = 0; pixel < kPixels; ++pixel) {
      if (csv.pixels[image * kPixels + pixel] < threshold) continue;
      const int64_t u = users(image), i = items(pixel);
      positives.push_back({u, i, static_cast<double>(gen() >> 11)});  // a random order per image
    }
  return make("digits-pixels",
              "sklearn digits as implicit feedback (fallback): images as users, the 64 pixel positions as "
              "items, a positive where the pixel value >= " + number(threshold),
              users, items, positives, "digits data '" + digits_csv + "': no pixel value >= " + number(threshold));
}

Interactions validation_split(const Interactions& d) {
  Interactions v;
  v.name = d.name + " (validation split)";
  v.description = d.description + " (validation split)";
  v.users = d.users;
  v.items = d.items;
  hold_out_latest(d.seen, v);  // seen is in time order (split above)
  return v;
}

std::vector<int64_t> items_by_popularity(const Interactions& d) {
  std::vector<int64_t> count(d.items, 0), order(d.items);
  for (const auto& [user, item] : d.train) ++count[item];
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return count[a] > count[b]; });
  return order;
}

}  // namespace gradscope::scenarios
