// Reading the rows tree models are judged on: scikit-learn's bundled CSVs (three layouts),
// CSV files with a header, their errors naming file, line and column, and the reproducible
// train/validation split.
#include "gradscope/trees/data_files.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "../common/error_of.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

TEST(SklearnCsv, ReadsTheThreeLayouts) {
  GRADSCOPE_REQUIRE_DATA(data_file("diabetes.csv"));
  const TreeData cancer = read_sklearn_csv(data_file("breast_cancer.csv"));  // "569,30,..." first
  EXPECT_EQ(cancer.rows, 569u);
  EXPECT_EQ(cancer.cols, 30u);
  EXPECT_EQ(cancer.row(0)[0], 17.99);
  EXPECT_EQ(std::set<double>(cancer.y.begin(), cancer.y.end()), (std::set<double>{0, 1}));
  const TreeData digits = read_sklearn_csv(data_file("digits.csv"));  // no header at all
  EXPECT_EQ(digits.rows, 1797u);
  EXPECT_EQ(digits.cols, 64u);
  EXPECT_EQ(digits.y[0], 0);
  EXPECT_EQ(digits.names[63], "f63");
  const TreeData diabetes = read_sklearn_csv(data_file("diabetes.csv"));  // named columns
  EXPECT_EQ(diabetes.rows, 442u);
  EXPECT_EQ(diabetes.cols, 10u);
  EXPECT_EQ(diabetes.names[0], "age");
  EXPECT_EQ(diabetes.names[9], "s6");
  EXPECT_EQ(diabetes.row(0)[2], 32.1);
  EXPECT_EQ(diabetes.y[0], 151);
}

class CsvFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& bytes) const { return scratch_.write("d.csv", bytes); }
  ScratchDir scratch_;
};

TEST_F(CsvFiles, HeaderLabelAndMissingCells) {
  const std::string path = write("a,y,b\r\n1,0,2\n\n3.5,1,\nNA,1,-1e-320\n");
  const TreeData d = read_csv_data(path, "y");
  EXPECT_EQ(d.rows, 3u);
  EXPECT_EQ(d.cols, 2u);
  EXPECT_EQ(d.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d.y, (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(d.row(1)[0], 3.5);
  EXPECT_TRUE(std::isnan(d.row(1)[1]));
  EXPECT_TRUE(std::isnan(d.row(2)[0]));
  EXPECT_EQ(d.row(2)[1], -1e-320);  // a denormal is a number
  const TreeData unlabelled = read_csv_data(path, "");
  EXPECT_EQ(unlabelled.cols, 3u);
  EXPECT_FALSE(unlabelled.labelled());
}

TEST_F(CsvFiles, WrittenDataReadsBackExactly) {
  TreeData d;
  d.rows = 2;
  d.cols = 2;
  d.x = {0.1, std::nan(""), 1e300, -2.5e-7};
  d.y = {1, 0};
  d.names = {"p", "q"};
  const std::string path = scratch_.path("w.csv");
  write_csv_data(path, d);
  const TreeData back = read_csv_data(path, "label");
  EXPECT_EQ(back.names, d.names);
  EXPECT_EQ(back.y, d.y);
  EXPECT_EQ(back.x[0], 0.1);
  EXPECT_TRUE(std::isnan(back.x[1]));
  EXPECT_EQ(back.x[2], 1e300);
  EXPECT_EQ(back.x[3], -2.5e-7);
}

TEST_F(CsvFiles, ErrorsNameFileLineAndColumn) {
  const std::string p = scratch_.path("d.csv");
  const std::string head = "data file '" + p + "': ";
  EXPECT_EQ(error_of([&] { read_csv_data(write("a,b\n1,2\n3\n"), "b"); }),
            head + "line 3: 1 fields, the header has 2");
  EXPECT_EQ(error_of([&] { read_csv_data(write("a,b\n1,2\nx1,2\n"), "b"); }),
            head + "line 3, column 'a': \"x1\" is not a finite number");
  EXPECT_EQ(error_of([&] { read_csv_data(write("a,b\n1,1e999\n"), "b"); }),
            head + "line 2, column 'b': \"1e999\" is not a finite number");
  EXPECT_EQ(error_of([&] { read_csv_data(write("a,b\n1,2\n"), "label"); }),
            head + "no column named 'label' (line 1 names the columns)");
  EXPECT_EQ(error_of([&] { read_csv_data(write("y,y\n1,2\n"), "y"); }),
            head + "label column 'y' appears twice");
  EXPECT_EQ(error_of([&] { read_csv_data(write("a,y\n1,\n"), "y"); }), head + "line 2: no label");
  EXPECT_EQ(error_of([&] { read_csv_data(write(""), "y"); }),
            head + "empty (a header row of column names is needed)");
  EXPECT_EQ(error_of([&] { read_sklearn_csv(write("1,2\n3\n")); }),
            head + "line 2: 1 fields, expected 2");
  EXPECT_EQ(error_of([&] { read_csv_data("/nonexistent/d.csv", "y"); }),
            "data file '/nonexistent/d.csv': no such file");
}

TEST(SplitRows, ReproducibleDisjointAndComplete) {
  TreeData d;
  d.rows = 101;
  d.cols = 1;
  for (std::size_t i = 0; i < d.rows; ++i) {
    d.x.push_back(static_cast<double>(i));
    d.y.push_back(static_cast<double>(i % 2));
  }
  const auto [a, b] = split_rows(d, 0.3, 7);
  EXPECT_EQ(b.rows, 30u);  // 30.3 rounds to 30
  EXPECT_EQ(a.rows, 71u);
  std::set<double> seen(a.x.begin(), a.x.end());
  seen.insert(b.x.begin(), b.x.end());
  EXPECT_EQ(seen.size(), 101u);
  for (std::size_t i = 0; i < a.rows; ++i) EXPECT_EQ(a.y[i], std::fmod(a.x[i], 2));
  const auto [a2, b2] = split_rows(d, 0.3, 7);
  EXPECT_EQ(a2.x, a.x);
  const auto [a3, b3] = split_rows(d, 0.3, 8);
  EXPECT_NE(a3.x, a.x);
  EXPECT_EQ(error_of([&] { split_rows(d, 1.5, 1); }), "split: fraction 1.500000 must be in [0, 1]");
}

}  // namespace
}  // namespace gradscope::test
