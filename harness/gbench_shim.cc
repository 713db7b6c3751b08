// The only C++ file in the harness: wraps Google Benchmark (1.7.1 and 1.8.x) behind a C API.
// Every entry point catches exceptions so none crosses into C.
#include "gbench_shim.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "console_line.h"

#if KM_GB_MAJOR > 1 || (KM_GB_MAJOR == 1 && KM_GB_MINOR >= 8)
#define KM_GB_HAS_SKIPPED 1
#else
#define KM_GB_HAS_SKIPPED 0
#endif

namespace {

benchmark::State &S(gb_state *st) { return *reinterpret_cast<benchmark::State *>(st); }

const char *unit_name(benchmark::TimeUnit u) {
  switch (u) {
    case benchmark::kNanosecond: return "ns";
    case benchmark::kMicrosecond: return "us";
    case benchmark::kMillisecond: return "ms";
    default: return "s";
  }
}

// The library's context block, then one short line per run (harness/console_line.c: name, time, GB/s,
// share, status within 160 columns) instead of its table of every counter; every run handed to C. The
// options are this run's: colour only when asked, and never the tabular counters.
class ForwardingReporter : public benchmark::ConsoleReporter {
 public:
  ForwardingReporter(gb_run_cb cb, void *user, int console)
      : benchmark::ConsoleReporter(console == GB_CONSOLE_COLOR ? OO_Color : OO_None),
        cb_(cb),
        user_(user),
        console_(console != GB_CONSOLE_NONE) {}

  bool ReportContext(const Context &context) override {
    return console_ ? benchmark::ConsoleReporter::ReportContext(context) : true;
  }

  void ReportRuns(const std::vector<Run> &reports) override {
    if (console_ && !header_printed_) {
      char head[4 * KM_CONSOLE_WIDTH];
      km_console_header(Colored(), head, sizeof head);
      GetOutputStream() << head;
      header_printed_ = true;
    }
    for (const Run &r : reports) Forward(r);
  }

 private:
  int Colored() const { return (output_options_ & OO_Color) != 0; }

  void PrintLine(const gb_run &g) {
    char buf[4 * KM_CONSOLE_WIDTH];
    km_console_run_line(&g, Colored(), buf, sizeof buf);
    GetOutputStream() << buf << std::flush;
  }

  void Forward(const Run &r) {
    std::vector<const char *> names;
    std::vector<double> values;
    for (const auto &kv : r.counters) {
      names.push_back(kv.first.c_str());
      values.push_back(kv.second.value);
    }
    std::string full = r.benchmark_name();
    std::string run_name = r.run_name.str();
    gb_run g;
    std::memset(&g, 0, sizeof g);
    g.name = r.run_name.function_name.c_str();
    g.full_name = full.c_str();
    g.run_name = run_name.c_str();
    g.is_aggregate = r.run_type == Run::RT_Aggregate;
    g.aggregate_name = r.aggregate_name.c_str();
    g.aggregate_unit = r.aggregate_unit == benchmark::kPercentage ? "percentage" : "time";
    g.family_index = r.family_index;
    g.per_family_instance_index = r.per_family_instance_index;
    g.repetitions = r.repetitions;
    g.repetition_index = r.repetition_index;
    g.threads = r.threads;
    g.iterations = r.iterations;
    g.real_time = r.GetAdjustedRealTime();
    g.cpu_time = r.GetAdjustedCPUTime();
    g.time_unit = unit_name(r.time_unit);
#if KM_GB_HAS_SKIPPED
    g.error = r.skipped == benchmark::internal::SkippedWithError;
    g.skipped = r.skipped == benchmark::internal::SkippedWithMessage;
    g.message = r.skip_message.c_str();
#else
    // Before 1.8 a skip is an error whose message the harness starts with "skipped: ".
    g.skipped = r.error_occurred && r.error_message.rfind("skipped: ", 0) == 0;
    g.error = r.error_occurred && !g.skipped;
    g.message = r.error_message.c_str();
#endif
    g.label = r.report_label.c_str();
    g.ncounters = names.size();
    g.counter_names = names.data();
    g.counter_values = values.data();
    if (console_) PrintLine(g);
    if (cb_) cb_(&g, user_);
  }

  gb_run_cb cb_;
  void *user_;
  bool console_;
  bool header_printed_ = false;
};

// Google Benchmark's reading of a flag value: a single character other than 0/f/n, or any word other
// than false/no/off, is true.
bool truthy(const std::string &v) {
  if (v.size() == 1) return std::isalnum(static_cast<unsigned char>(v[0])) && !std::strchr("0fFnN", v[0]);
  std::string low;
  for (char c : v) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return low != "false" && low != "no" && low != "off";
}

}  // namespace

extern "C" int gb_init(int argc, char **argv, char *err, size_t errlen) {
  try {
    benchmark::Initialize(&argc, argv);
    for (int i = 1; i < argc; i++) {
      std::snprintf(err, errlen, "unknown Google Benchmark flag '%s' (see --help; flags after -- go to it)", argv[i]);
      return -1;
    }
    return 0;
  } catch (const std::exception &e) {
    std::snprintf(err, errlen, "Google Benchmark initialisation failed: %s", e.what());
    return -1;
  }
}

extern "C" int gb_register(const char *name, gb_fn fn, void *arg, int repetitions, double min_time,
                           long long iterations) {
  try {
    benchmark::internal::Benchmark *b =
        benchmark::RegisterBenchmark(name, [fn, arg](benchmark::State &st) { fn(reinterpret_cast<gb_state *>(&st), arg); });
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (repetitions > 1) b->Repetitions(repetitions);
    if (iterations > 0)
      b->Iterations(static_cast<benchmark::IterationCount>(iterations));
    else if (min_time > 0)
      b->MinTime(min_time);
    return 0;
  } catch (...) {
    return -1;
  }
}

extern "C" int gb_color_wanted(int argc, char *const *argv) {
  std::string value = "auto";
  const char flag[] = "--benchmark_color=";
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], flag, sizeof flag - 1) == 0) value = argv[i] + sizeof flag - 1;
  if (value != "auto") return truthy(value) ? 1 : 0;
  const char *term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) && term && *term && std::strcmp(term, "dumb") != 0;
}

extern "C" long gb_run_all(gb_run_cb cb, void *user, int console, char *err, size_t errlen) {
  try {
    ForwardingReporter reporter(cb, user, console);
    return static_cast<long>(benchmark::RunSpecifiedBenchmarks(&reporter));
  } catch (const std::exception &e) {
    std::snprintf(err, errlen, "benchmark run failed: %s", e.what());
    return -1;
  } catch (...) {
    std::snprintf(err, errlen, "benchmark run failed");
    return -1;
  }
}

extern "C" void gb_add_context(const char *key, const char *value) {
  try {
    benchmark::AddCustomContext(key, value);
  } catch (...) {
  }
}

extern "C" void gb_shutdown(void) { benchmark::Shutdown(); }
extern "C" const char *gb_library_version(void) { return KM_GB_VERSION; }

extern "C" int gb_keep_running(gb_state *st) { return S(st).KeepRunning() ? 1 : 0; }
extern "C" void gb_set_iteration_time(gb_state *st, double seconds) { S(st).SetIterationTime(seconds); }
extern "C" void gb_counter(gb_state *st, const char *name, double value) {
  try {
    S(st).counters[name] = benchmark::Counter(value);
  } catch (...) {
  }
}
extern "C" void gb_label(gb_state *st, const char *label) {
  try {
    S(st).SetLabel(label);
  } catch (...) {
  }
}
extern "C" void gb_skip_with_error(gb_state *st, const char *message) { S(st).SkipWithError(message); }
extern "C" void gb_skip_with_message(gb_state *st, const char *message) {
#if KM_GB_HAS_SKIPPED
  S(st).SkipWithMessage(message);
#else
  S(st).SkipWithError(message);
#endif
}
extern "C" int gb_error_occurred(gb_state *st) { return S(st).error_occurred() ? 1 : 0; }
