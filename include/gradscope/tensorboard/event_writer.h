// EventWriter: a TensorBoard event file (events.out.tfevents.<time>.<host>) written one event
// per step, each event holding that step's scalars, histograms and texts.
//
//   gradscope::tensorboard::EventWriter w("runs/tb");        // throws Error naming the path
//   gradscope::tensorboard::StepSummary s;
//   s.scalar("grad_l2/fc1", 0.12);
//   s.text("findings", "verdict: healthy");
//   if (!w.write(step, wall_time, s)) std::cerr << w.error();  // never throws once open
//   w.close();
//
// After a failed write (disk full, file size limit, I/O error) the writer writes nothing more
// and cuts the file back to its last whole record, so every reader sees a file that ends
// cleanly; error() says what failed. Protobuf stays inside the library: this header is plain
// data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/tensorboard/histogram.h"

namespace gradscope::tensorboard {

/// The values of one event. Tags are made safe by the writer (event_tag).
class StepSummary {
 public:
  enum class Kind { kScalar, kHistogram, kText };
  struct Value {
    Kind kind = Kind::kScalar;
    std::string tag;
    double scalar = 0;    ///< kScalar; stored as float (TensorBoard's simple_value), NaN kept
    Histogram histogram;  ///< kHistogram
    std::string text;     ///< kText (TensorBoard's text plugin renders it as markdown)
  };

  void scalar(std::string tag, double value);
  void histogram(std::string tag, Histogram histogram);
  void text(std::string tag, std::string text);
  bool empty() const { return values_.empty(); }
  const std::vector<Value>& values() const { return values_; }
  void clear() { values_.clear(); }

 private:
  std::vector<Value> values_;
};

/// `tag` as written: control characters escaped and bytes that are not UTF-8 as \xNN
/// (terminal_text), since TensorBoard's tags are UTF-8 strings shown in one line.
std::string event_tag(const std::string& tag);

/// How an event file is created.
struct EventWriterOptions {
  std::size_t buffer_bytes = 1 << 16;  ///< events are written once this many bytes wait
};

/// Writes one event file. Not thread-safe: one producer.
class EventWriter {
 public:
  /// Creates `dir` (and parents) if missing and a new event file in it, starting with the
  /// file-version event. Throws Error "cannot write TensorBoard events to '<dir>': <reason>".
  explicit EventWriter(const std::string& dir, EventWriterOptions options = {});
  /// Flushes; errors are kept in error(), not thrown.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// Queues one event (nothing when `values` is empty). False once any write has failed.
  bool write(int64_t step, double wall_time, const StepSummary& values);
  /// Writes what is queued. False once any write has failed.
  bool flush();
  /// Flushes and closes the file. False once any write has failed.
  bool close();

  bool failed() const { return !error_.empty(); }
  /// What failed first ("" while nothing has).
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  /// Bytes in the file now (whole records only).
  int64_t bytes_written() const { return written_; }

 private:
  void append_event(const std::string& serialized);
  void fail(const std::string& what, int err);

  std::string path_;
  EventWriterOptions options_;
  int fd_ = -1;
  std::string buffer_;             // whole records not yet written
  std::vector<std::size_t> ends_;  // end offset in buffer_ of each record in it
  int64_t written_ = 0;            // bytes of whole records in the file
  std::string error_;
};

/// Seconds since the Unix epoch, as TensorBoard's wall_time.
double wall_time_now();

}  // namespace gradscope::tensorboard
