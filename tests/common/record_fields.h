// Records whose every field holds its own value, and field-by-field comparison, both looping
// over the record's table (core/record_field.h): a test built on these covers a field added to
// the table without a line of its own, and names the field that was lost.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "gradscope/core/record_field.h"

namespace gradscope::test {

/// `Owner` with field i of `fields` set to a value no other field has: counts 1000 - 7i +
/// offset (each at most the counts before it, as a subset's count is), doubles 0.5 + 1.25i +
/// offset (exact in binary).
template <class Owner, class Fields>
Owner distinct_fields(const Fields& fields, int64_t offset = 0) {
  Owner o;
  int64_t i = 0;
  for (const RecordField<Owner>& f : fields) {
    if (f.count) o.*f.count = 1000 - 7 * i + offset;
    else o.*f.real = 0.5 + 1.25 * static_cast<double>(i) + static_cast<double>(offset);
    ++i;
  }
  return o;
}

/// Expects every field of `got` to equal `want`'s (doubles bit for bit), naming each that differs.
template <class Owner, class Fields>
void expect_fields_eq(const Owner& got, const Owner& want, const Fields& fields) {
  for (const RecordField<Owner>& f : fields) {
    if (f.count) {
      EXPECT_EQ(got.*f.count, want.*f.count) << "field " << f.name;
    } else {
      const double g = got.*f.real, w = want.*f.real;
      EXPECT_EQ(std::memcmp(&g, &w, sizeof g), 0) << "field " << f.name << ": " << g << " != " << w;
    }
  }
}

}  // namespace gradscope::test
