#include "benchmarks/harness/profile_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/harness/cpu_profiler.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/json_string.h"
#include "benchmarks/harness/profile_summary.h"
#include "lib/symbols.h"

namespace perfscale {
namespace {

Flag& profile_flag = DefineSuiteBoolFlag(
    "profile", false,
    "sample cpu-clock with kernel and user callchains during each benchmark's timed region "
    "and write its top symbols (self, children) to --profile_out");
Flag& profile_out_flag =
    DefineSuiteFlag("profile_out", "", "a file path", "where --profile writes its JSON",
                    "<--benchmark_out>.profile.json, else perfscale.profile.json");
Flag& profile_hz_flag = DefineSuiteFlag("profile_hz", "4000", "an integer 1..100000",
                                        "--profile's samples per second of CPU time");

constexpr size_t kTopSymbols = 25;  // per benchmark in the file, by self and by children
constexpr size_t kPrintedSymbols = 8;

struct Settings {
  bool on = false;
  int hz = 4000;
  std::string path;
};

Settings& GetSettings() {
  static auto* settings = new Settings;
  return *settings;
}

struct BenchmarkProfile {
  std::string name;
  RawProfile raw;
  std::string note;  // why the profile is missing or partial
};

// In the order the benchmarks first ran. Benchmarks run one at a time on the main
// thread, so none of this needs a lock.
std::vector<BenchmarkProfile>& Profiles() {
  static auto* profiles = new std::vector<BenchmarkProfile>;
  return *profiles;
}

BenchmarkProfile& ProfileOf(const std::string& name) {
  for (BenchmarkProfile& profile : Profiles()) {
    if (profile.name == name) return profile;
  }
  Profiles().push_back(BenchmarkProfile{name, {}, {}});
  return Profiles().back();
}

std::unique_ptr<CpuProfiler>& Active() {
  static auto* active = new std::unique_ptr<CpuProfiler>;
  return *active;
}
std::string& ActiveName() {
  static auto* name = new std::string;
  return *name;
}

void Note(const std::string& name, const absl::Status& status) {
  BenchmarkProfile& profile = ProfileOf(name);
  if (profile.note.empty()) profile.note = std::string(status.message());
}

std::string DefaultPath(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (absl::StartsWith(arg, "--benchmark_out=") && arg.size() > 16) {
      return absl::StrCat(arg.substr(16), ".profile.json");
    }
  }
  // Under `bazel run` the working directory is the runfiles tree; put it where the
  // user ran the command.
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  return dir != nullptr && dir[0] != '\0' ? absl::StrCat(dir, "/perfscale.profile.json")
                                          : "perfscale.profile.json";
}

}  // namespace

ProfileScope::ProfileScope(const std::string& name) : name_(name) {
  if (!GetSettings().on) return;
  CpuProfilerOptions options;
  options.frequency_hz = GetSettings().hz;
  absl::StatusOr<std::unique_ptr<CpuProfiler>> opened = CpuProfiler::Open(options);
  if (!opened.ok()) {
    Note(name_, opened.status());
    return;
  }
  Active() = *std::move(opened);
  ActiveName() = name_;
  ProfileOf(name_);  // listed even when it records nothing
}

ProfileScope::~ProfileScope() {
  if (Active() == nullptr) return;
  absl::StatusOr<RawProfile> raw = Active()->Stop();
  Active().reset();
  if (!raw.ok()) {
    Note(name_, raw.status());
    return;
  }
  ProfileOf(name_).raw.Merge(*raw);
}

void ResumeProfile() {
  if (Active() == nullptr) return;
  if (absl::Status enabled = Active()->Enable(); !enabled.ok()) Note(ActiveName(), enabled);
}

void PauseProfile() {
  if (Active() == nullptr) return;
  if (absl::Status disabled = Active()->Disable(); !disabled.ok()) Note(ActiveName(), disabled);
}

namespace {

// kernel.perf_event_max_sample_rate, or 0 where it cannot be read. Above it the kernel
// throttles a sampling event (PERF_RECORD_THROTTLE, until the next tick): fewer samples
// than the rate asked for, and nothing says so.
int64_t MaxSampleRate() {
  std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
  int64_t rate = 0;
  return in >> rate ? rate : 0;
}

}  // namespace

absl::Status SetUpProfiling(const std::vector<std::string>& args) {
  absl::StatusOr<int64_t> hz = ParseInt(profile_hz_flag.value(), 1, 100000);
  if (!hz.ok()) return profile_hz_flag.Reject(profile_hz_flag.value(), hz.status());
  Settings& settings = GetSettings();
  settings.on = profile_flag.bool_value();
  settings.hz = static_cast<int>(*hz);
  if (!settings.on) return absl::OkStatus();
  if (const int64_t max_rate = MaxSampleRate(); max_rate > 0 && *hz > max_rate) {
    if (profile_hz_flag.is_set()) {
      return profile_hz_flag.Reject(
          profile_hz_flag.value(),
          absl::InvalidArgumentError(absl::StrCat(
              "above kernel.perf_event_max_sample_rate (", max_rate,
              "), where the kernel throttles the profile silently; ask for at most ", max_rate,
              " or raise it: sudo sysctl kernel.perf_event_max_sample_rate=", *hz)));
    }
    // The default: the fastest rate the kernel keeps, said in the header.
    settings.hz = static_cast<int>(max_rate);
  }
  settings.path = profile_out_flag.value().empty() ? DefaultPath(args) : profile_out_flag.value();
  // Fail before anything runs, not after an hour of benchmarks; a file the probe
  // created is removed again, so an interrupted run leaves nothing behind.
  const bool existed = access(settings.path.c_str(), F_OK) == 0;
  if (!std::ofstream(settings.path, std::ios::app)) {
    return profile_out_flag.Annotate(
        absl::InvalidArgumentError(absl::StrCat("cannot write '", settings.path, "'")));
  }
  if (!existed) unlink(settings.path.c_str());
  benchmark::AddCustomContext("profile_file", settings.path);
  benchmark::AddCustomContext(
      "profile_event", absl::StrCat("cpu-clock, ", settings.hz, " Hz, kernel+user callchains"));
  return absl::OkStatus();
}

absl::Status FinishProfiling() {
  const Settings& settings = GetSettings();
  if (!settings.on) return absl::OkStatus();
  ProcessSymbolizer& symbols = ProcessSymbolizer::Get();
  auto resolve = [&symbols](uint64_t address, bool kernel) {
    return symbols.Resolve(address, kernel);
  };
  const absl::Status& kernel_status = symbols.KernelStatus();
  std::string json = absl::StrCat(
      "{\"event\": \"cpu-clock\", \"frequency_hz\": ", settings.hz, ", \"kernel_symbols\": ",
      JsonString(kernel_status.ok() ? "ok" : std::string(kernel_status.message())),
      ", \"benchmarks\": [");
  std::string text = absl::StrCat("perfscale profile (cpu-clock, ", settings.hz,
                                  " Hz, kernel+user callchains): ", settings.path, "\n");
  if (!kernel_status.ok()) {
    absl::StrAppend(&text, "  kernel symbols missing: ", kernel_status.message(), "\n");
  }
  // The kernel lowers the limit itself when sampling interrupts take too long.
  if (const int64_t max_rate = MaxSampleRate(); max_rate > 0 && max_rate < settings.hz) {
    absl::StrAppend(&text, "  throttled: the kernel lowered perf_event_max_sample_rate to ",
                    max_rate, " during the run, so fewer than ", settings.hz,
                    " samples per second were kept\n");
  }
  bool first = true;
  for (const BenchmarkProfile& profile : Profiles()) {
    ProfileSummary summary = Summarize(ResolveChains(profile.raw.chains, resolve), kTopSymbols);
    std::string note = profile.note;
    if (note.empty()) note = profile.raw.kernel_excluded;
    if (note.empty() && summary.samples == 0) note = "no samples in the timed region";
    std::string body = ProfileSummaryJson(summary);
    absl::StrAppend(&json, first ? "" : ", ", "{\"name\": ", JsonString(profile.name),
                    ", \"lost\": ", profile.raw.lost, ", \"note\": ", JsonString(note), ", ",
                    body.substr(1));
    first = false;
    absl::StrAppend(
        &text, profile.name,
        profile.raw.lost > 0 ? absl::StrCat(" (", profile.raw.lost, " samples lost)") : "", "\n");
    if (!note.empty()) absl::StrAppend(&text, "  ", note, "\n");
    if (summary.samples > 0) absl::StrAppend(&text, FormatProfile(summary, kPrintedSymbols));
  }
  absl::StrAppend(&json, "]}\n");
  std::ofstream out(settings.path, std::ios::trunc);
  out << json;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", settings.path));
  std::fputs(text.c_str(), stderr);
  return absl::OkStatus();
}

}  // namespace perfscale
