// The run store's bytes, pinned: the blobs the codecs write for a fixed set of records (module
// records, channel records, attention heads, histograms) against golden/store_blobs.hex, written
// by the codecs before their field lists became tables (core/record_field.h). A change here is a
// change of the run file's format, which needs the schema version and `upgrade` to say so
// (run_schema.h). And every field of those tables comes back from the store as it went in.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "../common/record_fields.h"
#include "golden_util.h"
#include "store/internal/channel_codec.h"
#include "store/internal/histogram_codec.h"
#include "store/internal/record_codec.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
    if (i % 32 == 31) out += '\n';
  }
  return out + "\n";
}

// Counts past one varint byte and past 2^32, NaN and infinities, so every encoding path shows.
HeadStats head(int i) {
  HeadStats h;
  h.queries = 300 + i;
  h.nonfinite_queries = i == 1 ? (int64_t{1} << 40) : 3;
  h.max_logit = i == 2 ? std::nan("") : 12.5 * i;
  h.entropy_sum = i == 3 ? -kInf : 0.1 * i;
  h.fraction_queries = 200 + i;
  h.entropy_fraction_sum = 1e-300 * i;
  h.top_queries = i;
  return h;
}

TEST(StoreFormat, BlobsAreTheBytesWrittenBeforeTheFieldTables) {
  std::string out;
  std::string records;
  for (int node = 0; node < 4; ++node) {
    Stats s = test::stats_for(130 + node, node);
    if (node == 3) s.count = s.finite = int64_t{1} << 50, s.min = kInf, s.max = -kInf;
    internal::append_record(records, static_cast<uint32_t>(node), static_cast<uint8_t>(node + 1), s);
  }
  out += "records\n" + hex(records);

  std::string channels;
  ChannelRecord c;
  c.activation = {test::stats_for(1, 2), test::stats_for(3, 4)};
  c.output_grad = {test::stats_for(5, 6)};
  c.effective_rank = 2.75;
  internal::append_channel(channels, 7, c);
  internal::append_channel(channels, 300, ChannelRecord{});
  out += "channels\n" + hex(channels);

  std::string attention;
  internal::append_attention(attention, 2, AttentionRecord{9, "", {head(0), head(1), head(2), head(3)}});
  internal::append_attention(attention, 200, AttentionRecord{9, "", {}});
  out += "attention\n" + hex(attention);

  std::string histograms;
  ElementHistogram h;
  h.num = 1000, h.nonfinite = 2, h.min = -3.5, h.max = 7.25, h.sum = 11.0, h.sum_squares = 99.5;
  h.buckets = {{0, 10}, {5, 500}, {9, 488}};
  internal::append_histogram(histograms, 4, 3, h);
  out += "histograms\n" + hex(histograms);

  test::expect_golden("store_blobs.hex", out);
}

// A field in kStatsFields or kHeadStatsFields that the codec forgot fails here, by name.
TEST(StoreFormat, EveryFieldOfTheTablesRoundTrips) {
  const Stats s = test::distinct_fields<Stats>(kStatsFields);
  std::string records;
  internal::append_record(records, 3, 4, s);
  internal::StepDecoder d(records, 1);
  internal::StoredRecord r;
  ASSERT_TRUE(d.next(r));
  EXPECT_FALSE(d.next(r));
  EXPECT_TRUE(d.ok());
  test::expect_fields_eq(r.stats, s, kStatsFields);

  const HeadStats h = test::distinct_fields<HeadStats>(kHeadStatsFields), g = test::distinct_fields<HeadStats>(kHeadStatsFields, 9);
  std::string attention;
  internal::append_attention(attention, 5, AttentionRecord{0, "", {h, g}});
  std::vector<internal::StoredWithNode<AttentionRecord>> read;
  ASSERT_TRUE(internal::decode_attention(attention, 1, read));
  ASSERT_EQ(read.at(0).record.heads.size(), 2u);
  test::expect_fields_eq(read[0].record.heads[0], h, kHeadStatsFields);
  test::expect_fields_eq(read[0].record.heads[1], g, kHeadStatsFields);
}

}  // namespace
}  // namespace gradscope
