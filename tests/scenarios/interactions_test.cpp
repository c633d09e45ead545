// Interaction data (MovieLens and the digits-pixel fallback) on tiny files written here, and
// the matrix-factorisation model on them: splits, numbering, bad input, what a run reports.
#include "interactions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../common/error_of.h"
#include "../common/require_data.h"
#include "gradscope/core/error.h"
#include "matrix_factorization.h"

namespace gradscope::scenarios {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

fs::path write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-interactions-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

using test::error_of;

// Users 10, 20, 30 and movies 5, 6, 7 (ids are numbered in order of first positive). User 10's
// positives by time: 6 (t 100), 5 (t 200), 7 (t 300), written out of time order; user 20 has
// one positive (kept for training, no test item); user 30 rated only below 4.
constexpr const char* kMovieLens =
    "\"userId\",\"movieId\",\"rating\",\"timestamp\"\n"
    "10,5,4.5,200\n"
    "30,5,3.5,50\n"
    "10,7,4,300\n"
    "20,6,5,10\n"
    "10,6,4,100\n"
    "10,8,2,400\n";

TEST(Interactions, MovieLensHoldsOutEachUsersLatestPositive) {
  const Interactions d = load_movielens(write("ml.csv", kMovieLens).string());
  EXPECT_EQ(d.name, "movielens");
  EXPECT_EQ(d.users, 2);  // 10 -> 0, 20 -> 1; user 30 has no positive
  EXPECT_EQ(d.items, 3);  // 5 -> 0, 7 -> 1, 6 -> 2; movie 8 only rated 2
  EXPECT_EQ(d.train, (Pairs{{0, 2}, {0, 0}, {1, 2}}));  // user 0 in time order: 6, 5
  EXPECT_EQ(d.test_user, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.test_item, (std::vector<int64_t>{1}));  // movie 7, the latest
  EXPECT_EQ(d.seen, (std::vector<std::vector<int64_t>>{{2, 0}, {2}}));
  EXPECT_THAT(d.description, HasSubstr("rating >= 4"));

  const Interactions strict = load_movielens(write("ml.csv", kMovieLens).string(), 4.5);
  EXPECT_EQ(strict.users, 2);
  EXPECT_EQ(strict.train.size(), 2u);  // 10-5 and 20-6, one positive each: no test users
  EXPECT_TRUE(strict.test_user.empty());
}

TEST(Interactions, MovieLensBadInputNamesFileAndLine) {
  const std::string missing = "/nonexistent/gradscope/movielens.csv";
  EXPECT_THAT(error_of([&] { load_movielens(missing); }),
              HasSubstr("cannot open movielens data '" + missing + "': No such file or directory "
                        "(run scripts/fetch-data.sh movielens)"));
  const std::string path = write("bad.csv", "").string();
  const auto error = [&](const std::string& text) {
    std::ofstream(path) << text;
    return error_of([&] { load_movielens(path); });
  };
  const std::string at = "movielens data '" + path + "' line ";
  EXPECT_EQ(error(""), at + "1: expected the header userId,movieId,rating,timestamp");
  EXPECT_EQ(error("1,2,4,5\n"), at + "1: expected the header userId,movieId,rating,timestamp");
  EXPECT_EQ(error("userId,movieId,rating,timestamp\n1,2,4,5\n1,3,4\n"),
            at + "3: expected 4 fields (userId,movieId,rating,timestamp), found 3");
  EXPECT_EQ(error("userId,movieId,rating,timestamp\n1,2,4,5,6\n"),
            at + "2: expected 4 fields (userId,movieId,rating,timestamp), found more");
  EXPECT_EQ(error("userId,movieId,rating,timestamp\n1,2,four,5\n"), at + "2: 'four' is not a number");
  EXPECT_EQ(error("userId,movieId,rating,timestamp\n1.5,2,4,5\n"), at + "2: '1.5' is not an id");
  EXPECT_EQ(error("userId,movieId,rating,timestamp\n1,2,3,5\n"),
            "movielens data '" + path + "': no rating >= 4");
}

// A digits row: 64 pixel values then the label.
std::string digits_row(const std::vector<int>& inked, int label) {
  std::string row;
  for (int p = 0; p < 64; ++p)
    row += std::to_string(std::count(inked.begin(), inked.end(), p) ? 8 + p % 9 : p % 8) + ",";
  return row + std::to_string(label) + "\n";
}

TEST(Interactions, DigitsPixelsAreImagesByInkedPixelPositions) {
  // Pixel values: inked positions get 8..16, the rest 0..7 (below the threshold 8).
  const std::string csv = digits_row({3, 40, 41}, 1) + digits_row({}, 2) + digits_row({41, 3, 63, 20}, 3) +
                          digits_row({7}, 4);
  const std::string path = write("digits.csv", csv).string();
  const Interactions d = digits_pixel_interactions(path);
  EXPECT_EQ(d.name, "digits-pixels");
  EXPECT_THAT(d.description, HasSubstr("pixel value >= 8"));
  EXPECT_EQ(d.users, 3);  // image 1 has no inked pixel
  EXPECT_EQ(d.items, 6);  // 3, 40, 41, 20, 63, 7, numbered by pixel order within image order
  EXPECT_EQ(d.train.size() + d.test_user.size(), 8u);
  EXPECT_EQ(d.test_user, (std::vector<int64_t>{0, 1}));  // image 3 has one positive: train only
  // Each held-out item is one of the user's positives and not among its training items.
  const std::vector<std::vector<int64_t>> positives = {{0, 1, 2}, {0, 2, 3, 4}};
  for (std::size_t k = 0; k < d.test_user.size(); ++k) {
    const int64_t u = d.test_user[k];
    EXPECT_TRUE(std::count(positives[u].begin(), positives[u].end(), d.test_item[k])) << u;
    EXPECT_FALSE(std::count(d.seen[u].begin(), d.seen[u].end(), d.test_item[k])) << u;
    EXPECT_EQ(d.seen[u].size() + 1, positives[u].size());
  }
  EXPECT_EQ(d.seen[2], (std::vector<int64_t>{5}));
  // The held-out draw depends on the seed only.
  const Interactions again = digits_pixel_interactions(path);
  EXPECT_EQ(again.test_item, d.test_item);
  EXPECT_EQ(again.train, d.train);
  // Threshold 13: inked values 8 + p % 9 reach it at p % 9 >= 5, i.e. pixel 41 (images 0
  // and 2) and pixel 7 (image 3); one positive per image, so none is held out.
  const Interactions dark = digits_pixel_interactions(path, 13);
  EXPECT_EQ(dark.users, 3);
  EXPECT_EQ(dark.items, 2);
  EXPECT_EQ(dark.train, (Pairs{{0, 0}, {1, 0}, {2, 1}}));
  EXPECT_TRUE(dark.test_user.empty());
  EXPECT_EQ(error_of([&] { digits_pixel_interactions(path, 17); }),
            "digits data '" + path + "': no pixel value >= 17");
}

TEST(Interactions, DigitsPixelsBadInputNamesFileAndLine) {
  EXPECT_THAT(error_of([] { digits_pixel_interactions("/nonexistent/digits.csv"); }),
              HasSubstr("cannot open digits data '/nonexistent/digits.csv'"));
  const std::string path = write("bad-digits.csv", digits_row({1}, 0) + "1,2,3\n").string();
  EXPECT_THAT(error_of([&] { digits_pixel_interactions(path); }),
              HasSubstr("digits data '" + path + "' line 2: expected 65 values, found 3"));
}

TEST(MatrixFactorization, ReportsBothTablesAndEveryStep) {
  std::string csv;
  for (int image = 0; image < 40; ++image) csv += digits_row({image % 64, (image * 7) % 64, 5, 9, 33}, image % 10);
  const Interactions d = digits_pixel_interactions(write("mf.csv", csv).string());
  MfOptions o;
  o.epochs = 3;
  o.batch = 32;
  int64_t progress_calls = 0, last_total = 0, records = 0;
  std::vector<int64_t> steps_seen;
  o.progress = [&](int64_t done, int64_t total) {
    ++progress_calls;
    EXPECT_EQ(done, progress_calls);
    last_total = total;
  };
  o.on_step = [&](const std::vector<Record>& step) {
    for (const Record& r : step) {
      EXPECT_TRUE(r.node == "user" || r.node == "item") << r.node;
      steps_seen.push_back(r.step);
      ++records;
    }
  };
  const MfRun r = train_matrix_factorization(d, o);
  const auto n = static_cast<int64_t>(d.train.size());
  const int64_t expected_steps = 3 * ((n + 31) / 32);
  EXPECT_EQ(r.steps, expected_steps);
  EXPECT_EQ(progress_calls, expected_steps);
  EXPECT_EQ(last_total, expected_steps);
  EXPECT_EQ(records, 4 * expected_steps);  // per table: touched rows' gradient and update
  EXPECT_TRUE(std::is_sorted(steps_seen.begin(), steps_seen.end()));
  ASSERT_EQ(r.report.tables.size(), 2u);
  EXPECT_EQ(r.report.tables[0].layer, "user");
  EXPECT_EQ(r.report.tables[1].layer, "item");
  EXPECT_EQ(r.report.tables[0].stats.num_embeddings, d.users);
  EXPECT_EQ(r.report.tables[1].stats.num_embeddings, d.items);
  EXPECT_EQ(r.report.tables[0].stats.tracked_steps, expected_steps);
  ASSERT_EQ(r.profiles.size(), 2u);
  EXPECT_EQ(r.profiles[1].layer, "item");
  EXPECT_EQ(r.profiles[1].exposed_rows, r.report.tables[1].stats.exposed_rows);
  ASSERT_EQ(r.user_ndcg.size(), d.test_user.size());
  double hr = 0;
  for (double x : r.user_ndcg) hr += x > 0;
  EXPECT_DOUBLE_EQ(r.hr, hr / d.test_user.size());
  EXPECT_GE(r.ndcg, 0.0);
  EXPECT_LE(r.ndcg, r.hr);  // 1 / log2(rank + 2) <= 1 per hit
  EXPECT_TRUE(std::isfinite(r.final_loss));

  // Same seed, same run: the validation's paired arms rely on it.
  o.progress = {};
  o.on_step = {};
  const MfRun again = train_matrix_factorization(d, o);
  EXPECT_EQ(again.user_ndcg, r.user_ndcg);
}

TEST(MatrixFactorization, EmptyDataThrows) {
  Interactions d;
  d.name = "none";
  EXPECT_EQ(error_of([&] { train_matrix_factorization(d, {}); }),
            "interactions 'none': 0 training pairs and 0 test users; matrix factorisation needs both");
}

// On the real digits pixels, MF ranks each image's held-out inked pixel far above chance.
TEST(MatrixFactorization, LearnsTheRealDigitsPixels) {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  const std::string path = std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/digits.csv";
  GRADSCOPE_REQUIRE_DATA(path);
  const Interactions d = digits_pixel_interactions(path);
  MfOptions o;
  o.epochs = 5;
  const MfRun r = train_matrix_factorization(d, o);
  // Chance: the held-out item is one of (items - training items) candidates, ranked at random.
  double chance = 0;
  for (std::size_t k = 0; k < d.test_user.size(); ++k)
    chance += std::min(1.0, 10.0 / static_cast<double>(d.items - d.seen[d.test_user[k]].size()));
  chance /= static_cast<double>(d.test_user.size());
  EXPECT_GT(r.hr, chance + 0.1) << "chance " << chance;
}

}  // namespace
}  // namespace gradscope::scenarios
