#include "gradscope/tensorboard/event_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "decode.h"
#include "gradscope/core/error.h"

namespace gradscope::tensorboard {
namespace {

using test::decode_file;

TEST(EventWriter, WritesFileVersionThenOneEventPerStep) {
  const std::string dir = test::fresh_folder("writer");
  std::string path;
  {
    EventWriter w(dir + "/sub/tb");  // parents created
    path = w.path();
    EXPECT_NE(path.find("/sub/tb/events.out.tfevents."), std::string::npos);
    StepSummary s;
    s.scalar("grad_l2/fc1", 0.25);
    s.scalar("nan/fc1", std::nan(""));
    s.histogram("h/fc1", histogram_of({1.0, 2.0}));
    s.text("gradscope/report", "line \"one\"\nline two");
    EXPECT_TRUE(w.write(7, 1000.5, s));
    EXPECT_TRUE(w.write(8, 1001.0, StepSummary{}));  // nothing to write
    EXPECT_TRUE(w.close());
  }
  const test::Decoded d = decode_file(path);
  ASSERT_EQ(d.problem, "");
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].file_version(), "brain.Event:2");
  const auto& e = d.events[1];
  EXPECT_EQ(e.step(), 7);
  EXPECT_EQ(e.wall_time(), 1000.5);
  ASSERT_EQ(e.summary().value_size(), 4);
  EXPECT_EQ(e.summary().value(0).tag(), "grad_l2/fc1");
  EXPECT_EQ(e.summary().value(0).simple_value(), 0.25f);
  EXPECT_TRUE(std::isnan(e.summary().value(1).simple_value()));
  EXPECT_EQ(e.summary().value(2).histo().num(), 2);
  EXPECT_EQ(e.summary().value(3).metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(e.summary().value(3).tensor().string_val(0), "line \"one\"\nline two");
}

TEST(EventWriter, TagsAreOneLineUtf8) {
  EXPECT_EQ(event_tag("a\nb"), "a\\nb");
  EXPECT_EQ(event_tag("say \"hi\""), "say \"hi\"");
  EXPECT_EQ(event_tag("bad\xff"), "bad\\xff");
  EXPECT_EQ(event_tag("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(EventWriter, UnwritableFolderIsAnErrorNamingIt) {
  const std::string dir = test::fresh_folder("unwritable");
  std::ofstream(dir + "/file") << "x";
  try {
    EventWriter w(dir + "/file/tb");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "cannot write TensorBoard events to '" + dir + "/file/tb': ", 0),
              0u)
        << e.what();
  }
}

TEST(EventWriter, TwoWritersInOneFolderGetTwoFiles) {
  const std::string dir = test::fresh_folder("two");
  EventWriter a(dir), b(dir);
  EXPECT_NE(a.path(), b.path());
}

// A file that may not grow past the limit, as on a full disk: writes fail from then on, the
// error names the file, and the file ends at its last whole record.
TEST(EventWriter, FailedWriteLeavesWholeRecordsOnly) {
  const std::string dir = test::fresh_folder("limit");
  const int code = test::in_child_with_file_limit(20000, [&] {
    EventWriter w(dir, {/*buffer_bytes=*/3000});
    StepSummary s;
    for (int i = 0; i < 20; ++i) s.scalar("scalar/" + std::to_string(i), i);
    int64_t failed_at = -1;
    for (int64_t step = 0; step < 2000; ++step)
      if (!w.write(step, 1.0, s) && failed_at < 0) failed_at = step;
    if (failed_at < 0 || !w.failed()) return 10;
    if (w.error().find("File too large") == std::string::npos) return 11;
    if (w.error().find(w.path()) == std::string::npos) return 12;
    if (w.close()) return 13;
    return 0;
  });
  ASSERT_EQ(code, 0);
  const test::Decoded d = decode_file(test::only_event_file(dir));
  EXPECT_EQ(d.problem, "");
  EXPECT_LE(d.bytes, 20000u);
  EXPECT_GT(d.bytes, 14000u);  // the records before the limit are kept
  ASSERT_GT(d.events.size(), 2u);
  for (std::size_t i = 1; i < d.events.size(); ++i)
    EXPECT_EQ(d.events[i].step(), static_cast<int64_t>(i - 1));
}

}  // namespace
}  // namespace gradscope::tensorboard
