// `tools/perfscale inject`: the syscall injector (lib/syscall_injector.h) switched on until
// SIGTERM, SIGINT or SIGHUP (or --seconds S), or its cost measured on a bare loop.
//
//   inject [--events N] [--filter EXPR] [--seconds S]   # on until killed
//   inject --measure [--events N] [--filter EXPR]       # its true size
//
// Prints "inject: on: ..." (flushed) once the events are open and "inject: off" once they
// are closed; --measure prints the added nanoseconds per getppid(). Where the kernel or
// the privileges refuse, prints "SKIPPED: <reason>" on stdout and exits 2; a bad argument
// exits 2 with the usage line.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "lib/syscall_injector.h"

namespace {

constexpr char kProgram[] = "tools/perfscale inject";
constexpr char kUsage[] =
    "usage: tools/perfscale inject [-h] [--events N] [--filter EXPR] [--seconds S] [--measure]\n";
constexpr char kHelp[] = R"(
Adds real kernel work to every syscall, switchable at will: while it runs, N counting
perf events per CPU sit on raw_syscalls:sys_enter and raw_syscalls:sys_exit,
system-wide, and every syscall on every CPU walks 2N events in the kernel's tracepoint
handler. The work stops the moment the process exits. --measure sizes it on a bare
getppid() loop timed with and without the events, interleaved, and prints the added
nanoseconds per syscall. Needs root, CAP_PERFMON or perf_event_paranoid <= 0, and
tracefs; otherwise it prints `SKIPPED: reason` and exits 2.

options:
  -h, --help     show this help message and exit
  --events N     events per CPU and tracepoint (default 8)
  --filter EXPR  tracepoint filter on each event, e.g. 'id >= 0' (more work)
  --seconds S    switch off after S seconds (default: when killed)
  --measure      print the added nanoseconds per syscall, from a bare loop
)";

struct Args {
  int events = 8;
  std::string filter;
  double seconds = 0;  // 0: until a signal
  bool measure = false;
};

int UsageError(const std::string& message) {
  std::fputs(kUsage, stderr);
  std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  return 2;
}

// Returns -1 when the arguments are good, else the exit status (after printing).
int Parse(int argc, char** argv, Args* args) {
  bool seconds_given = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (arg == "--measure") {
      args->measure = true;
      continue;
    }
    std::string name(arg.substr(0, arg.find('=')));
    if (name != "--events" && name != "--filter" && name != "--seconds") {
      return UsageError(absl::StrCat("unrecognized arguments: ", arg));
    }
    std::string value;
    if (name.size() < arg.size()) {
      value = std::string(arg.substr(name.size() + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return UsageError(absl::StrCat("argument ", name, ": expected one argument"));
    }
    if (name == "--events") {
      if (!absl::SimpleAtoi(value, &args->events)) {
        return UsageError(absl::StrCat("argument --events: invalid int value: '", value, "'"));
      }
    } else if (name == "--filter") {
      args->filter = value;
    } else {
      if (!absl::SimpleAtod(value, &args->seconds) || std::isnan(args->seconds)) {
        return UsageError(absl::StrCat("argument --seconds: invalid float value: '", value, "'"));
      }
      seconds_given = true;
    }
  }
  if (!perfscale::CheckInjectorEventsPerCpu(args->events).ok()) {
    return UsageError(absl::StrCat("--events must be in 1..", perfscale::kMaxInjectorEventsPerCpu));
  }
  if (seconds_given && !(args->seconds > 0)) return UsageError("--seconds must be positive");
  return -1;
}

std::string Tracepoints() {
  return absl::StrCat(perfscale::kInjectorTracepoints[0], ", ", perfscale::kInjectorTracepoints[1]);
}

int Skipped(const absl::Status& status) {
  std::printf("SKIPPED: %s\n", std::string(status.message()).c_str());
  return 2;
}

int Measure(const Args& args) {
  absl::StatusOr<perfscale::InjectorCost> cost =
      perfscale::MeasureInjectorCost(args.events, args.filter);
  if (!cost.ok()) return Skipped(cost.status());
  std::printf(
      "inject: getppid() %.0f ns bare, %.0f ns with %d events per CPU on %s: %+.0f ns per "
      "syscall (%+.0f%%)\n",
      cost->bare_ns, cost->injected_ns, args.events, Tracepoints().c_str(), cost->added_ns(),
      100 * cost->added_ns() / cost->bare_ns);
  return 0;
}

// Until one of `signals` arrives, or `seconds` (0: no limit) pass.
void Wait(const sigset_t& signals, double seconds) {
  if (seconds <= 0) {
    while (sigwaitinfo(&signals, nullptr) < 0 && errno == EINTR) {
    }
    return;
  }
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  // Beyond 30 years is forever.
  const double limit = std::min(seconds, 1e9);
  const double end =
      static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 + limit;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = end - (static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9);
    if (left <= 0) return;
    timespec timeout;
    timeout.tv_sec = static_cast<time_t>(left);
    timeout.tv_nsec = static_cast<long>((left - static_cast<double>(timeout.tv_sec)) * 1e9);
    if (sigtimedwait(&signals, nullptr, &timeout) >= 0 || errno != EINTR) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int status = Parse(argc, argv, &args); status >= 0) return status;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  if (args.measure) {
    // Interrupted, it dies as any program does: the events close with it.
    sigprocmask(SIG_UNBLOCK, &signals, nullptr);
    return Measure(args);
  }
  // A signal from here on ends the wait below (after the open, if it came during it).
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  {
    absl::StatusOr<perfscale::SyscallInjector> injector =
        perfscale::SyscallInjector::Open(args.events, args.filter);
    if (!injector.ok()) return Skipped(injector.status());
    std::printf("inject: on: %zu events (%d per CPU on each of %s); stop with SIGTERM or Ctrl-C\n",
                injector->events(), args.events, Tracepoints().c_str());
    std::fflush(stdout);
    Wait(signals, args.seconds);
  }  // the events close here
  std::printf("inject: off\n");
  return 0;
}
