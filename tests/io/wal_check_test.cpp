// The log check against real logs SQLite wrote, with SQLite's own recovery as the ground truth:
// what SQLite shows of a damaged log equals what the check says it keeps.
#include <gtest/gtest.h>

#include "store/internal/wal_check.h"
#include "killed_run.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using internal::check_wal;
using internal::WalCheck;
using test::read_bytes;
using test::sqlite_step_count;

constexpr int64_t kHeader = 32, kFrameHeader = 24;

struct KilledLog {
  fs::path dir;
  std::string wal;
  WalCheck clean;
  int64_t frame_bytes = 0;
  int64_t offset(int64_t frame) const { return kHeader + frame * frame_bytes; }
};

KilledLog killed_log(const std::string& name, int steps, int nodes) {
  KilledLog k;
  k.dir = test::fresh_dir(name);
  test::write_killed_run(k.dir, steps, nodes);
  k.wal = read_bytes(k.dir / "run.db-wal");
  k.clean = check_wal(k.wal);
  k.frame_bytes = kFrameHeader + k.clean.page_size;
  return k;
}

TEST(WalCheck, AnUndamagedLogIsReadWhole) {
  const KilledLog k = killed_log("wal-clean", 60, 16);
  const WalCheck& c = k.clean;
  EXPECT_TRUE(c.header_valid);
  EXPECT_EQ(c.page_size, 4096u);
  EXPECT_EQ(c.frames, (static_cast<int64_t>(k.wal.size()) - kHeader) / k.frame_bytes);
  EXPECT_GT(c.frames, 20);
  EXPECT_EQ(c.valid_frames, c.frames);
  EXPECT_EQ(c.committed_frames, c.frames);  // killed after its last commit
  EXPECT_FALSE(c.damaged());
  EXPECT_EQ(c.damaged_from, -1);
  EXPECT_EQ(sqlite_step_count(k.dir / "run.db", k.wal), 60);
  fs::remove_all(k.dir);
}

TEST(WalCheck, AFlippedByteInAFrameLosesItAndEveryFrameAfterAsSqliteDoes) {
  const KilledLog k = killed_log("wal-flip", 60, 16);
  const int64_t frames = k.clean.frames;
  for (const int64_t bad : {int64_t{0}, frames / 3, frames / 2}) {
    SCOPED_TRACE(bad);
    for (const int64_t at : {int64_t{0}, int64_t{5}, kFrameHeader + 100, k.frame_bytes - 1}) {  // page number, salt, data, last byte
      SCOPED_TRACE(at);
      std::string wal = k.wal;
      wal[static_cast<std::size_t>(k.offset(bad) + at)] ^= 0x10;
      const WalCheck c = check_wal(wal);
      EXPECT_TRUE(c.damaged());
      EXPECT_EQ(c.valid_frames, bad);
      EXPECT_EQ(c.damaged_from, k.offset(bad));
      EXPECT_EQ(c.damaged_frames, frames - bad);
      EXPECT_TRUE(c.resumes_after_damage);
      EXPECT_GT(c.damaged_commits, 0);
      // Ground truth: SQLite shows exactly what the log holds up to the last commit before the
      // damaged frame, and fewer steps than were committed.
      const std::string kept = k.wal.substr(0, static_cast<std::size_t>(k.offset(c.committed_frames)));
      const int64_t shown = sqlite_step_count(k.dir / "run.db", wal);
      EXPECT_EQ(shown, sqlite_step_count(k.dir / "run.db", kept));
      EXPECT_LT(shown, 60);
    }
  }
  fs::remove_all(k.dir);
}

TEST(WalCheck, DamageInTheLastFrameIsCaughtThoughNothingVerifiesAfterIt) {
  const KilledLog k = killed_log("wal-last", 30, 8);
  std::string wal = k.wal;
  wal.back() ^= 0x01;
  const WalCheck c = check_wal(wal);
  EXPECT_EQ(c.damaged_frames, 1);
  EXPECT_EQ(c.damaged_from, k.offset(k.clean.frames - 1));
  EXPECT_FALSE(c.resumes_after_damage);
  EXPECT_EQ(c.damaged_commits, 1);
  EXPECT_EQ(sqlite_step_count(k.dir / "run.db", wal), 29);
  fs::remove_all(k.dir);
}

TEST(WalCheck, ADamagedHeaderLosesTheWholeLog) {
  const KilledLog k = killed_log("wal-header", 30, 8);
  for (const int at : {0, 9, 17, 30}) {  // magic, page size, salt, checksum
    SCOPED_TRACE(at);
    std::string wal = k.wal;
    wal[static_cast<std::size_t>(at)] ^= 0x04;
    const WalCheck c = check_wal(wal);
    EXPECT_FALSE(c.header_valid);
    EXPECT_TRUE(c.header_damaged);
    EXPECT_EQ(c.damaged_from, 0);
    EXPECT_GT(c.damaged_frames, 0);
  }
  std::string wal = k.wal;
  wal[20] ^= 0x04;  // salt-2: SQLite ignores the log and shows only what is in the file
  EXPECT_EQ(sqlite_step_count(k.dir / "run.db", wal), sqlite_step_count(k.dir / "run.db", ""));
  fs::remove_all(k.dir);
}

TEST(WalCheck, ALastFrameCutShortIsNotDamage) {
  const KilledLog k = killed_log("wal-torn", 30, 8);
  const std::string torn = k.wal.substr(0, k.wal.size() - 100);
  const WalCheck c = check_wal(torn);
  EXPECT_EQ(c.frames, k.clean.frames - 1);
  EXPECT_EQ(c.valid_frames, c.frames);
  EXPECT_FALSE(c.damaged());
  fs::remove_all(k.dir);
}

TEST(WalCheck, FramesLeftFromARestartedLogAreNotDamage) {
  // Enough pages for SQLite's automatic checkpoint (1000 pages): the log restarts from its
  // beginning with new salts, and frames of the old log remain after the new ones.
  const KilledLog k = killed_log("wal-restart", 2500, 64);
  const WalCheck& c = k.clean;
  EXPECT_TRUE(c.header_valid);
  EXPECT_LT(c.valid_frames, c.frames) << "the log did not restart; write more steps";
  EXPECT_FALSE(c.damaged());
  EXPECT_EQ(sqlite_step_count(k.dir / "run.db", k.wal), 2500);
  fs::remove_all(k.dir);
}

TEST(WalCheck, EmptyAndShortInputs) {
  EXPECT_FALSE(check_wal("").damaged());
  EXPECT_FALSE(check_wal(std::string(31, 'x')).damaged());
  const WalCheck garbage = check_wal(std::string(32 + 24 + 512, 'x'));  // a header that fails
  EXPECT_TRUE(garbage.header_damaged);
  EXPECT_FALSE(check_wal(std::string(32 + 24 + 511, 'x')).damaged()) << "no whole frame: nothing lost";
  EXPECT_FALSE(internal::check_wal_file("/nonexistent/run.db-wal").damaged());
}

}  // namespace
}  // namespace gradscope
