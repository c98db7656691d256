// ipi_flood: floods the machine with IPIs from a process of its own, so that a benchmark
// can show its attributed counters (ipis_sent/op, xcalls/op, ...) do not move while the
// system-wide one (ipis_system/op) does.
//
// One thread per allowed CPU, pinned there. All of them keep reading one shared page
// and zapping it (madvise MADV_DONTNEED): every zap of a page that threads on other
// CPUs have in their TLBs costs a TLB shootdown, a function-call IPI to each of those
// CPUs. Between zaps each also calls membarrier(PRIVATE_EXPEDITED), one more
// function-call IPI to every other CPU running one of its threads, so the flood stays
// heavy where a hypervisor batches or skips shootdowns to preempted vCPUs. And, where
// the breakpoint PMU exists, it toggles an inherited breakpoint from every CPU as
// BM_BreakpointEnable does: IPIs to every CPU whatever runs there.
//
//   bazel run //testing/common:ipi_flood -- --seconds=10
//   ipi_flood              # until SIGINT/SIGTERM; then prints the IPIs it sent itself
//                          # (lib/task_counters.h) and the machine-wide rate
//
// Exit status 0; 2 for a bad flag. Needs no privilege.
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/cpu_set.h"
#include "lib/interrupts.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/task_counters.h"

namespace {

std::atomic<bool> stop{false};
constexpr size_t kPages = 1;

void OnSignal(int) { stop.store(true); }

volatile char watched;  // never touched: the breakpoint never fires

void Park(int cpu) {
  if (!perfscale::SetAffinity(std::vector<int>{cpu}).ok()) return;
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void Toggle(int cpu, int breakpoint_fd) {
  if (!perfscale::SetAffinity(std::vector<int>{cpu}).ok()) return;
  while (!stop.load(std::memory_order_relaxed)) {
    ioctl(breakpoint_fd, PERF_EVENT_IOC_DISABLE, 0);
    ioctl(breakpoint_fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

void Flood(int cpu, char* shared, long page, bool use_membarrier) {
  if (!perfscale::SetAffinity(std::vector<int>{cpu}).ok()) return;  // a CPU taken away
  const size_t bytes = kPages * static_cast<size_t>(page);
  while (!stop.load(std::memory_order_relaxed)) {
    // Put the shared pages in this CPU's TLB, then zap them: every other CPU that did
    // the same (running a thread of this process) gets a shootdown. Reads of a zapped
    // shared page fault it back in; nothing is ever unmapped under another thread.
    for (size_t i = 0; i < kPages; ++i) (void)*static_cast<volatile char*>(shared + i * page);
    madvise(shared, bytes, MADV_DONTNEED);
    // And the cheapest IPI there is, to every other CPU running this process.
    if (use_membarrier) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;  // 0: until a signal
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--seconds=", 10) == 0) {
      char* end = nullptr;
      seconds = std::strtod(argv[i] + 10, &end);
      if (end == argv[i] + 10 || *end != '\0' || seconds < 0 || seconds > 86400) {
        std::fprintf(stderr,
                     "ipi_flood: --seconds: '%s' is not a number of seconds in [0, 86400]\n",
                     argv[i] + 10);
        return 2;
      }
    } else {
      std::fprintf(stderr, "ipi_flood: unknown argument '%s' (usage: ipi_flood [--seconds=N])\n",
                   argv[i]);
      return 2;
    }
  }
  absl::StatusOr<perfscale::CpuMask> allowed = perfscale::GetAffinity();
  absl::StatusOr<std::vector<int>> cpus =
      allowed.ok() ? absl::StatusOr<std::vector<int>>(allowed->Cpus()) : allowed.status();
  if (!cpus.ok() || cpus->size() < 2) {
    std::fprintf(stderr, "SKIPPED: ipi_flood needs at least 2 allowed CPUs\n");
    return 0;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const long page = sysconf(_SC_PAGESIZE);
  void* shared = mmap(nullptr, kPages * static_cast<size_t>(page), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("ipi_flood: mmap");
    return 1;
  }
  // Its own IPIs, counted the way the benchmarks count theirs (opened before the threads
  // so that they inherit it).
  std::unique_ptr<perfscale::TaskCounters> own = perfscale::TaskCounters::Open();
  bool own_counted = own->available(perfscale::TaskCounter::kIpisSent) && own->Start().ok();
  absl::StatusOr<perfscale::IpiCounts> before = perfscale::ReadIpiCounts();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  // Without registration (kernels before 4.16, or seccomp) only shootdowns flood.
  bool use_membarrier =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  for (int cpu : *cpus) {
    threads.emplace_back(Flood, cpu, static_cast<char*>(shared), page, use_membarrier);
  }
  // The benchmark's own mechanism, from another process: a breakpoint inherited by a
  // sleeping thread on every CPU, toggled from every CPU, costs an IPI per copy on
  // another CPU whatever runs there (where the breakpoint PMU exists).
  perfscale::BreakpointSpec spec;
  spec.address = &watched;
  spec.inherit = true;
  absl::StatusOr<perfscale::PerfEvent> breakpoint =
      perfscale::PerfEvent::Open(perfscale::BreakpointAttr(spec), 0, -1);
  if (breakpoint.ok()) {
    for (int cpu : *cpus) threads.emplace_back(Park, cpu);
    for (int cpu : *cpus) threads.emplace_back(Toggle, cpu, breakpoint->fd());
  }
  std::printf("ipi_flood: %zu threads on CPUs %s\n", threads.size(),
              perfscale::FormatCpuList(*cpus).c_str());
  std::fflush(stdout);
  while (!stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (seconds > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(seconds)) {
      stop.store(true);
    }
  }
  for (std::thread& thread : threads) thread.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  absl::StatusOr<perfscale::TaskCounts> sent = own->Stop();
  if (own_counted && sent.ok()) {
    std::printf("ipi_flood: sent %llu IPIs itself\n",
                static_cast<unsigned long long>(sent->ipis_sent));
  }
  absl::StatusOr<perfscale::IpiCounts> after = perfscale::ReadIpiCounts();
  if (before.ok() && after.ok()) {
    perfscale::IpiCounts delta = *after - *before;
    std::printf("ipi_flood: %.1f s, machine-wide %.0f function-call and %.0f TLB IPIs/s\n", elapsed,
                delta.function_call / elapsed, delta.tlb_shootdown / elapsed);
  }
  munmap(shared, kPages * static_cast<size_t>(page));
  return 0;
}
