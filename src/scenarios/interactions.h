// Implicit-feedback interaction data with a leave-one-out split, for the matrix-factorisation
// model of the demo and `make validate-embedding`.
//
//   Interactions d = load_movielens("data/movielens.csv");       // rating >= 4 is a positive
//   Interactions f = digits_pixel_interactions("data/digits.csv");  // fallback, see below
//   for (auto [user, item] : d.train) ...; d.test_item[k] is held out for d.test_user[k]
//
// Leave-one-out (as in the BPR and NCF evaluations): each user with at least two positives
// has the latest one held out as the test item; everything else trains. Users and items are
// numbered densely in order of first appearance among the positives.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gradscope::scenarios {

/// Positives of users on items, split for leave-one-out evaluation.
struct Interactions {
  std::string name;         ///< short, for run names: "movielens", "digits-pixels"
  std::string description;  ///< one line for people: source and what a positive is
  int64_t users = 0, items = 0;
  std::vector<std::pair<int64_t, int64_t>> train;  ///< (user, item)
  std::vector<int64_t> test_user, test_item;       ///< one held-out item per test user
  std::vector<std::vector<int64_t>> seen;          ///< training items per user
};

/// MovieLens ratings as written by scripts/fetch-data.sh (header userId,movieId,rating,
/// timestamp; then one rating a line): a positive is a rating >= `min_rating`; the latest
/// positive by timestamp is held out. Throws Error naming the file (and line) when it is
/// missing or malformed.
Interactions load_movielens(const std::string& path, double min_rating = 4.0);

/// The fallback when MovieLens is absent: sklearn digits (digits.csv from python3-sklearn) as
/// an implicit-feedback matrix, images as users and the 64 pixel positions as items, a
/// positive where the pixel value (0..16) is >= `threshold`. Pixels have no time, so the
/// held-out positive of each image is drawn with `seed`. Real data, but not real user
/// behaviour: its rankings say how well MF reconstructs ink patterns, nothing about taste.
Interactions digits_pixel_interactions(const std::string& digits_csv, double threshold = 8.0,
                                       uint64_t seed = 7);

/// The validation split for tuning, so no choice is made on the test items: each user's
/// latest training positive (the last in `seen`) is held out when the user has at least two;
/// the other training positives train; `data`'s test items are left out altogether. Name and
/// description gain " (validation split)".
Interactions validation_split(const Interactions& data);

/// Item ids ordered by their number of training positives, most first (ties: lower id
/// first): the most-popular baseline's ranking and the broken sampler's top items.
std::vector<int64_t> items_by_popularity(const Interactions& data);

}  // namespace gradscope::scenarios
