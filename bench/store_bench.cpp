// The run store: records per second sustained through the background writer (from the first
// add() to close() returning, so everything is committed), and seconds for `gradscope report`
// over a run of 1M node-step records: wall-clock, and the CPU time the process used (on a
// machine that other jobs share, the wall-clock is the CPU time over the process's share).
// Medians of interleaved repetitions; the last line is one JSON object.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gradscope/io/store/run_writer.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

gradscope::Stats stats_for(int64_t step, int node) {
  gradscope::Stats s;
  s.count = s.finite = 4096;
  s.zero = node % 5;
  const double l2 = 0.01 + 1e-3 * static_cast<double>((step * 31 + node) % 997);
  s.sum_sq = l2 * l2;
  s.sum = 0.1 * l2;
  s.sum_abs = 40 * l2;
  s.min = -l2 / 8;
  s.max = s.max_abs = l2 / 7;
  return s;
}

// Writes nodes x steps param_grad records; returns {total seconds, seconds inside add()}.
std::pair<double, double> write_run(const fs::path& dir, int nodes, int steps) {
  std::vector<std::string> names;
  for (int n = 0; n < nodes; ++n) names.push_back("encoder/block" + std::to_string(n / 4) + ".fc" + std::to_string(n % 4));
  gradscope::RunWriterOptions opt;
  opt.overwrite = true;
  opt.command_line = "store_bench";
  const auto start = Clock::now();
  gradscope::RunWriter w(dir.string(), opt);
  double in_add = 0;
  gradscope::Record r;
  r.site = gradscope::Site::kParamGrad;
  for (int64_t step = 0; step < steps; ++step) {
    const auto t = Clock::now();
    for (int n = 0; n < nodes; ++n) {
      r.step = step;
      r.node = names[n];
      r.stats = stats_for(step, n);
      w.add(r);
    }
    in_add += seconds_since(t);
  }
  w.close();
  return {seconds_since(start), in_add};
}

// User + system seconds of the children waited for so far.
double children_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// {wall seconds, CPU seconds} of one `gradscope report` (the shell that starts it included).
std::pair<double, double> time_report(const fs::path& run) {
  const std::string cmd = std::string(GRADSCOPE_CLI) + " report " + run.string() + " >/dev/null 2>&1";
  const double cpu_before = children_cpu_s();
  const auto start = Clock::now();
  const int status = std::system(cmd.c_str());
  const double s = seconds_since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "store_bench: '%s' failed (status %d)\n", cmd.c_str(), status);
    std::exit(3);
  }
  return {s, children_cpu_s() - cpu_before};
}

}  // namespace

int main() {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-store-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  constexpr int kWriteNodes = 200, kWriteSteps = 10000;  // 2M records per repetition
  constexpr int kReportNodes = 250, kReportSteps = 4000;  // 1M records
  constexpr double kReportRecords = double{kReportNodes} * kReportSteps;
  constexpr int kReps = 3;

  write_run(dir / "report-run", kReportNodes, kReportSteps);
  time_report(dir / "report-run");  // warm the page cache and the binary
  std::vector<double> write_s, add_s, report_s, report_cpu_s;
  for (int rep = 0; rep < kReps; ++rep) {  // interleaved: write, then report
    const auto [total, in_add] = write_run(dir / "write-run", kWriteNodes, kWriteSteps);
    write_s.push_back(total);
    add_s.push_back(in_add);
    const auto [wall, cpu] = time_report(dir / "report-run");
    report_s.push_back(wall);
    report_cpu_s.push_back(cpu);
  }
  const double records = double{kWriteNodes} * kWriteSteps;
  const double records_per_s = records / median(write_s);
  const double add_ns = median(add_s) / records * 1e9;
  const double report_per_million = median(report_s) / (kReportRecords / 1e6);
  const double report_cpu_per_million = median(report_cpu_s) / (kReportRecords / 1e6);
  const auto db_bytes = fs::file_size(dir / "write-run" / "run.db");
  std::printf("writer: %.0f records in %.3f s (median of %d) = %.0f records/s; add() on the training thread %.1f ns/record; "
              "%.1f bytes/record on disk\n",
              records, median(write_s), kReps, records_per_s, add_ns, static_cast<double>(db_bytes) / records);
  std::printf("report: gradscope report over %.0f records: %.3f s, %.3f s of CPU (medians of %d, process start "
              "included)\n",
              kReportRecords, median(report_s), median(report_cpu_s), kReps);
  std::printf("{\"bench\":\"store\",\"records_per_s\":%.0f,\"report_s_per_million\":%.3f,"
              "\"report_cpu_s_per_million\":%.3f}\n",
              records_per_s, report_per_million, report_cpu_per_million);
  fs::remove_all(dir);
  return 0;
}
