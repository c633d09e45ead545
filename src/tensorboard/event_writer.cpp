#include "gradscope/tensorboard/event_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "gradscope/core/error.h"
#include "gradscope/io/render/safe_text.h"
#include "internal/record_framing.h"
#include "tensorboard_event.pb.h"

namespace gradscope::tensorboard {
namespace {

namespace pb = gradscope::tensorboard::proto;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return event_tag(name);  // a file name: no controls, no '/'
}

void fill(pb::HistogramProto& out, const Histogram& h) {
  out.set_min(h.min);
  out.set_max(h.max);
  out.set_num(h.num);
  out.set_sum(h.sum);
  out.set_sum_squares(h.sum_squares);
  for (double l : h.limits) out.add_bucket_limit(l);
  for (double c : h.counts) out.add_bucket(c);
}

void fill(pb::Summary::Value& out, const StepSummary::Value& v) {
  out.set_tag(event_tag(v.tag));
  switch (v.kind) {
    case StepSummary::Kind::kScalar:
      out.set_simple_value(static_cast<float>(v.scalar));
      break;
    case StepSummary::Kind::kHistogram:
      fill(*out.mutable_histo(), v.histogram);
      break;
    case StepSummary::Kind::kText: {
      // TensorBoard's text plugin: a string tensor of shape [1], plugin_name "text".
      out.mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
      pb::TensorProto& t = *out.mutable_tensor();
      t.set_dtype(pb::DT_STRING);
      t.mutable_tensor_shape()->add_dim()->set_size(1);
      t.add_string_val(v.text);
      break;
    }
  }
}

}  // namespace

void StepSummary::scalar(std::string tag, double value) {
  Value v;
  v.kind = Kind::kScalar;
  v.tag = std::move(tag);
  v.scalar = value;
  values_.push_back(std::move(v));
}

void StepSummary::histogram(std::string tag, Histogram histogram) {
  Value v;
  v.kind = Kind::kHistogram;
  v.tag = std::move(tag);
  v.histogram = std::move(histogram);
  values_.push_back(std::move(v));
}

void StepSummary::text(std::string tag, std::string text) {
  Value v;
  v.kind = Kind::kText;
  v.tag = std::move(tag);
  v.text = std::move(text);
  values_.push_back(std::move(v));
}

std::string event_tag(const std::string& tag) { return terminal_text(tag); }

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(const std::string& dir, EventWriterOptions options) : options_(options) {
  const auto refuse = [&](const std::string& why) {
    throw Error("cannot write TensorBoard events to '" + dir + "': " + why);
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) refuse(ec.message());
  if (!std::filesystem::is_directory(dir, ec)) refuse("not a directory");
  // TensorBoard finds event files by "tfevents" in the name and orders them by the time in
  // it; a second writer in the same second and folder gets a numbered name instead.
  const std::string base =
      (std::filesystem::path(dir) /
       ("events.out.tfevents." + std::to_string(static_cast<long long>(wall_time_now())) + "." +
        host_name()))
          .string();
  for (int n = 0; fd_ < 0; ++n) {
    path_ = n == 0 ? base : base + "." + std::to_string(n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || n > 1000)) refuse(std::strerror(errno));
  }
  pb::Event first;
  first.set_wall_time(wall_time_now());
  first.set_file_version("brain.Event:2");  // version 2: readers purge only on a restart event
  append_event(first.SerializeAsString());
  if (!flush()) refuse(error_);
}

EventWriter::~EventWriter() { close(); }

bool EventWriter::write(int64_t step, double wall_time, const StepSummary& values) {
  if (failed()) return false;
  if (values.empty()) return true;
  pb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  pb::Summary& summary = *event.mutable_summary();
  for (const StepSummary::Value& v : values.values()) fill(*summary.add_value(), v);
  append_event(event.SerializeAsString());
  return buffer_.size() < options_.buffer_bytes || flush();
}

void EventWriter::append_event(const std::string& serialized) {
  internal::append_record(buffer_, serialized);
  ends_.push_back(buffer_.size());
}

bool EventWriter::flush() {
  if (failed()) return false;
  if (fd_ < 0) return true;
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Keep the records that landed whole; cut the torn one so readers see a clean end.
      std::size_t whole = 0;
      for (std::size_t end : ends_)
        if (end <= done) whole = end;
      if (::ftruncate(fd_, static_cast<off_t>(written_ + static_cast<int64_t>(whole))) == 0)
        written_ += static_cast<int64_t>(whole);
      fail("cannot write '" + path_ + "'", err);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  written_ += static_cast<int64_t>(buffer_.size());
  buffer_.clear();
  ends_.clear();
  return true;
}

bool EventWriter::close() {
  const bool ok = flush();
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && !failed()) fail("cannot close '" + path_ + "'", errno);
    fd_ = -1;
  }
  return ok && !failed();
}

void EventWriter::fail(const std::string& what, int err) {
  if (error_.empty()) error_ = what + ": " + std::strerror(err);
  buffer_.clear();
  ends_.clear();
}

}  // namespace gradscope::tensorboard
