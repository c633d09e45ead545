#include "run_loading.h"

#include "gradscope/core/attention/history.h"
#include "gradscope/core/series/history.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <streambuf>

#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/store/saved_report.h"
#include "gradscope/io/render/terminal.h"

namespace gradscope::cli {
namespace {

std::string& stored_command_line() {
  static std::string line;
  return line;
}

// std::cout's buffer: like the standard one (sync_with_stdio), it hands every write straight to
// C's stdout, so std::cout and printf keep their order; unlike it, it keeps errno of the first
// write that failed, since later calls (SQLite's among them) overwrite errno long before main
// can say why the output was lost.
class StdoutBuffer final : public std::streambuf {
 public:
  int error() const { return error_; }
  void note_error() {
    if (error_ == 0) error_ = errno != 0 ? errno : EIO;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (std::fputc(traits_type::to_char_type(c), stdout) != EOF) return c;
    note_error();
    return traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::size_t written = std::fwrite(s, 1, static_cast<std::size_t>(n), stdout);
    if (written < static_cast<std::size_t>(n)) note_error();
    return static_cast<std::streamsize>(written);
  }
  int sync() override {
    if (std::fflush(stdout) == 0) return 0;
    note_error();
    return -1;
  }

 private:
  int error_ = 0;
};

// Never destroyed: std::cout flushes through it at exit, after function-local statics are gone.
StdoutBuffer& stdout_buffer() {
  static StdoutBuffer* buffer = new StdoutBuffer;
  return *buffer;
}

}  // namespace

void print_warnings(const RunReader& reader) {
  for (const std::string& w : reader.warnings()) std::cerr << "gradscope: warning: " << terminal_text(w) << "\n";
}

LoadedRun load_run(const std::string& path, bool partial, StepRange range, bool series, bool frames) {
  RunReader reader(path, ReadOptions{partial});
  if (reader.step_count() == 0) throw Error("run '" + path + "': no steps recorded");
  const Thresholds& thresholds = reader.metadata().thresholds;
  LoadedRun run{path, reader.metadata(), {}, reader.summary(), Timeline(thresholds, frames ? 0 : 1), {}, {}, {}, {}, 0};
  SavedReportBuilder builder(run.summary);
  SeriesBuilder steps(kSeriesSteps);
  // The flow summary takes each frame as the timeline closes it (at most one per add), so it
  // is the same whether the timeline keeps every frame or only the last.
  FlowSummaryBuilder flow(thresholds);
  int64_t frames_summarized = 0;
  const auto summarize_closed_frame = [&] {
    const int64_t closed = static_cast<int64_t>(run.timeline.frames().size()) + run.timeline.dropped();
    if (closed == frames_summarized) return;
    flow.add(run.timeline.frames().back());
    frames_summarized = closed;
  };
  ProgressBar bar("reading " + path);
  AttentionHistory attention(kSeriesSteps);
  ScalarHistory scalars(kSeriesSteps);
  RunVisitor visit = builder.visitor([&](const Record& r) {
    run.timeline.add(r);
    summarize_closed_frame();
    if (series) steps.add(r);
  });
  if (series) {
    visit.attention = [&, judge = visit.attention](const AttentionRecord& a) {
      judge(a);
      attention.add(a);
    };
    visit.scalar = [&, judge = visit.scalar](const StepScalar& x) {
      judge(x);
      scalars.add(x);
    };
  }
  run.steps = reader.for_each(visit, range, [&](int64_t done, int64_t total) { bar.update(done, total); });
  bar.finish();
  print_warnings(reader);
  run.damage = reader.damage();
  if (run.steps == 0) throw Error("run '" + path + "': no steps recorded in the selected range");
  run.timeline.finish();
  summarize_closed_frame();
  run.report = builder.build();
  run.flow = flow.finish(run.timeline.nodes());
  if (series) {
    run.series = steps.finish();
    run.attention = attention.records();
    run.scalars = scalars.values();
  }
  return run;
}

void add_partial_flag(CLI::App* command, bool& partial) {
  command->add_flag("--partial", partial, "read the complete steps of a damaged run instead of failing");
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();  // a failed flush shows only here
  if (!out) throw Error("cannot write '" + path + "'");
}

void watch_stdout() { std::cout.rdbuf(&stdout_buffer()); }

void check_stdout() {
  StdoutBuffer& buffer = stdout_buffer();
  std::cout.flush();
  if (std::fflush(stdout) != 0) buffer.note_error();  // printf's output, which bypasses the buffer
  if (buffer.error() == 0 && !std::ferror(stdout)) return;
  throw Error(std::string("cannot write to standard output (") +
              std::strerror(buffer.error() != 0 ? buffer.error() : EIO) + ")");
}

const std::string& command_line() { return stored_command_line(); }

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i) line += ' ';
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (plain) {
      line += arg;
    } else {  // shell-quote so the line can be pasted back
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  stored_command_line() = line;
}

}  // namespace gradscope::cli
