#include "benchmarks/event_open/event_grid.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace perfscale {

absl::StatusOr<GridOrder> ParseGridOrder(absl::string_view name) {
  for (GridOrder order : {GridOrder::kEventMajor, GridOrder::kCpuMajor, GridOrder::kParallel}) {
    if (name == GridOrderName(order)) return order;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown order '", name, "' (expected event_major, cpu_major or parallel)"));
}

const char* GridOrderName(GridOrder order) {
  switch (order) {
    case GridOrder::kEventMajor:
      return "event_major";
    case GridOrder::kCpuMajor:
      return "cpu_major";
    case GridOrder::kParallel:
      return "parallel";
  }
  return "unknown";
}

EventGrid::EventGrid(GridSpec spec, GridOrder order, CpuWorkers* workers, Pin pin)
    : spec_(std::move(spec)),
      order_(order),
      workers_(workers),
      pin_(pin ? std::move(pin) : Pin([](int cpu) { return ScopedAffinity::PinTo(cpu); })),
      num_events_(static_cast<int>(spec_.events.size())),
      num_cpus_(static_cast<int>(spec_.cpus.size())) {
  if (order_ == GridOrder::kParallel && workers_ != nullptr) {
    notes_.affinity_refused = workers_->unpinned_cpus();
    notes_.refusal = workers_->refusal();
  }
}

PerfEvent& EventGrid::at(int cpu_index, int event) {
  return entries_[static_cast<size_t>(cpu_index) * static_cast<size_t>(num_events_) +
                  static_cast<size_t>(event)]
      .event;
}

size_t EventGrid::open_fds() const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(),
                                           [](const Entry& entry) { return entry.event.valid(); }));
}

void EventGrid::NoteRefusal(int cpu, const absl::Status& status) {
  if (std::find(notes_.affinity_refused.begin(), notes_.affinity_refused.end(), cpu) ==
      notes_.affinity_refused.end()) {
    notes_.affinity_refused.push_back(cpu);
  }
  if (notes_.refusal.empty()) notes_.refusal = std::string(status.message());
}

absl::Status EventGrid::ForEach(const Op& op) {
  switch (order_) {
    case GridOrder::kEventMajor:
      for (int event = 0; event < num_events_; ++event) {
        for (int c = 0; c < num_cpus_; ++c) {
          if (absl::Status status = op(c, event); !status.ok()) return status;
        }
      }
      return absl::OkStatus();
    case GridOrder::kCpuMajor:
      for (int c = 0; c < num_cpus_; ++c) {
        // Held until this CPU's events are done; its destructor puts the mask back.
        absl::StatusOr<ScopedAffinity> pinned = pin_(spec_.cpus[static_cast<size_t>(c)]);
        if (!pinned.ok()) NoteRefusal(spec_.cpus[static_cast<size_t>(c)], pinned.status());
        for (int event = 0; event < num_events_; ++event) {
          if (absl::Status status = op(c, event); !status.ok()) return status;
        }
      }
      return absl::OkStatus();
    case GridOrder::kParallel: {
      if (workers_ == nullptr || workers_->size() != num_cpus_) {
        return absl::FailedPreconditionError("parallel order needs one worker per CPU of the grid");
      }
      for (int c = 0; c < num_cpus_; ++c) {
        if (workers_->cpu(c) != spec_.cpus[static_cast<size_t>(c)]) {
          return absl::FailedPreconditionError(
              "parallel order: the workers' CPUs differ from the grid's");
        }
      }
      return workers_->RunOnEach([&](int c) {
        for (int event = 0; event < num_events_; ++event) {
          if (absl::Status status = op(c, event); !status.ok()) return status;
        }
        return absl::OkStatus();
      });
    }
  }
  return absl::InternalError("unknown grid order");
}

absl::Status EventGrid::Open() {
  if (!entries_.empty()) return absl::FailedPreconditionError("grid is already open");
  if (spec_.group_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("group size must be at least 1, got ", spec_.group_size));
  }
  entries_.resize(static_cast<size_t>(num_events_) * static_cast<size_t>(num_cpus_));
  for (int c = 0; c < num_cpus_; ++c) {
    for (int event = 0; event < num_events_; ++event) {
      entries_[static_cast<size_t>(c) * static_cast<size_t>(num_events_) +
               static_cast<size_t>(event)]
          .cpu = spec_.cpus[static_cast<size_t>(c)];
    }
  }
  int groups = (num_events_ + spec_.group_size - 1) / spec_.group_size;
  broken_.assign(static_cast<size_t>(groups) * static_cast<size_t>(num_cpus_), 0);
  fallbacks_.store(0, std::memory_order_relaxed);
  absl::Status opened = ForEach([this](int c, int event) { return OpenOne(c, event); });
  notes_.weak_group_fallbacks = fallbacks_.load(std::memory_order_relaxed);
  if (!opened.ok()) entries_.clear();
  return opened;
}

absl::Status EventGrid::OpenOne(int cpu_index, int event) {
  const perf_event_attr& attr = spec_.events[static_cast<size_t>(event)];
  int cpu = spec_.cpus[static_cast<size_t>(cpu_index)];
  int group = event / spec_.group_size;
  int leader = group * spec_.group_size;
  bool grouped =
      leader != event && !broken_[static_cast<size_t>(group) * static_cast<size_t>(num_cpus_) +
                                  static_cast<size_t>(cpu_index)];
  int group_fd = grouped ? at(cpu_index, leader).fd() : -1;
  absl::StatusOr<PerfEvent> opened = PerfEvent::Open(attr, -1, cpu, group_fd);
  if (opened.ok()) {
    at(cpu_index, event) = *std::move(opened);
    return absl::OkStatus();
  }
  // Like perf stat's weak groups: a member the kernel will not put in the group (EINVAL,
  // EBADF) breaks the group; anything else (permissions, limits) is a real failure.
  if (!grouped || opened.status().code() != absl::StatusCode::kInvalidArgument) {
    return opened.status();
  }
  return BreakGroup(cpu_index, event);
}

absl::Status EventGrid::BreakGroup(int cpu_index, int event) {
  int group = event / spec_.group_size;
  int leader = group * spec_.group_size;
  int cpu = spec_.cpus[static_cast<size_t>(cpu_index)];
  broken_[static_cast<size_t>(group) * static_cast<size_t>(num_cpus_) +
          static_cast<size_t>(cpu_index)] = 1;
  fallbacks_.fetch_add(1, std::memory_order_relaxed);
  // Members first, so the leader is never closed under them.
  for (int member = event - 1; member >= leader; --member) at(cpu_index, member).Close();
  for (int member = leader; member <= event; ++member) {
    absl::StatusOr<PerfEvent> alone =
        PerfEvent::Open(spec_.events[static_cast<size_t>(member)], -1, cpu, -1);
    if (!alone.ok()) return alone.status();
    at(cpu_index, member) = *std::move(alone);
  }
  return absl::OkStatus();
}

absl::Status EventGrid::Enable() {
  if (entries_.empty()) return absl::FailedPreconditionError("grid is not open");
  return ForEach([this](int c, int event) { return at(c, event).Enable(); });
}

absl::StatusOr<uint64_t> EventGrid::Read() {
  if (entries_.empty()) return absl::FailedPreconditionError("grid is not open");
  // One sum per CPU: parallel workers never share one.
  sums_.assign(static_cast<size_t>(num_cpus_), 0);
  absl::Status read = ForEach([this](int c, int event) {
    absl::StatusOr<uint64_t> value = at(c, event).ReadCount();
    if (!value.ok()) return value.status();
    sums_[static_cast<size_t>(c)] += *value;
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  uint64_t total = 0;
  for (uint64_t sum : sums_) total += sum;
  return total;
}

absl::Status EventGrid::Disable() {
  if (entries_.empty()) return absl::FailedPreconditionError("grid is not open");
  return ForEach([this](int c, int event) { return at(c, event).Disable(); });
}

void EventGrid::Close() {
  if (entries_.empty()) return;
  ForEach([this](int c, int event) {
    at(c, event).Close();
    return absl::OkStatus();
  }).IgnoreError();
  entries_.clear();  // anything the order could not reach (a failed parallel setup)
}

}  // namespace perfscale
