// The field tables of the records that cross the run store and the wire (core/record_field.h):
// their rows are well formed, and merge() keeps every field as its row says. The store and wire
// round trips over the same tables are in tests/io/store_format_test.cpp,
// tests/torch/distributed_wire_test.cpp and tests/torch/distributed_views_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "../common/record_fields.h"
#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/stats/stats.h"

namespace gradscope {
namespace {

// Each row is one member of one kind; a bound or a presence count is a count row read before it
// (the store reads a stored_below field after its bound).
template <class Owner, class Fields>
void expect_well_formed(const Fields& fields) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const RecordField<Owner>& f = fields[i];
    EXPECT_TRUE(names.insert(f.name).second) << "name twice: " << f.name;
    EXPECT_NE(f.count == nullptr, f.real == nullptr) << f.name << ": one of count and real";
    if (f.count) {
      EXPECT_EQ(f.merge, FieldMerge::kSum) << f.name << ": counts add";
    }
    if (f.present) {
      EXPECT_TRUE(f.real && f.merge != FieldMerge::kSum) << f.name << ": presence only for min and max";
    }
    for (int64_t Owner::*other : {f.present, f.stored_below}) {
      if (!other) continue;
      const auto at = std::find_if(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(i),
                                   [&](const RecordField<Owner>& g) { return g.count == other; });
      EXPECT_NE(at, fields.begin() + static_cast<std::ptrdiff_t>(i)) << f.name << ": names a count not before it";
    }
  }
}

TEST(RecordField, TablesAreWellFormed) {
  expect_well_formed<Stats>(kStatsFields);
  expect_well_formed<HeadStats>(kHeadStatsFields);
}

// merge() of two records with a value of their own in every field gives, in every field, the
// sum, the larger or the smaller of the two as the row says.
template <class Owner, class Fields>
void expect_merge_keeps_every_field(const Fields& fields) {
  const Owner a = test::distinct_fields<Owner>(fields), b = test::distinct_fields<Owner>(fields, 5000);
  for (const Owner& m : {merge(a, b), merge(b, a)}) {
    Owner want;
    for (const RecordField<Owner>& f : fields) {
      if (f.count) {
        want.*f.count = a.*f.count + b.*f.count;
        continue;
      }
      const double x = a.*f.real, y = b.*f.real;
      want.*f.real = f.merge == FieldMerge::kSum ? x + y : f.merge == FieldMerge::kMax ? std::max(x, y) : std::min(x, y);
    }
    test::expect_fields_eq(m, want, fields);
  }
}

TEST(RecordField, MergeKeepsEveryFieldOfStats) { expect_merge_keeps_every_field<Stats>(kStatsFields); }
TEST(RecordField, MergeKeepsEveryFieldOfHeadStats) { expect_merge_keeps_every_field<HeadStats>(kHeadStatsFields); }

// A side whose presence count is 0 holds a placeholder, not a value: the other side's wins even
// when the placeholder is larger (HeadStats' max_logit is 0 with no row; a real maximum may be -3).
TEST(RecordField, ASideWithoutRowsGivesWay) {
  int checked = 0;
  for (const RecordField<HeadStats>& f : kHeadStatsFields) {
    if (!f.present) continue;
    HeadStats empty = test::distinct_fields<HeadStats>(kHeadStatsFields, 100), full = test::distinct_fields<HeadStats>(kHeadStatsFields);
    empty.*f.present = 0;
    EXPECT_EQ(merge(empty, full).*f.real, full.*f.real) << f.name;
    EXPECT_EQ(merge(full, empty).*f.real, full.*f.real) << f.name;
    ++checked;
  }
  EXPECT_GE(checked, 1);  // max_logit
}

TEST(RecordField, CountsSaturateInsteadOfOverflowing) {
  EXPECT_EQ(add_counts(INT64_MAX, 1), INT64_MAX);
  EXPECT_EQ(add_counts(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(add_counts(40, 2), 42);
  HeadStats h;
  h.queries = INT64_MAX;
  EXPECT_EQ(merge(h, h).queries, INT64_MAX);
}

}  // namespace
}  // namespace gradscope
