// Turns perf's "pmu/term=value,alias/" event names into a perf_event_attr the way perf
// does, from sysfs: /sys/bus/event_source/devices/<pmu>/type (the attr type), format/<term>
// (which attr bits a term fills, e.g. "config:0-7") and events/<alias> (a named set of
// terms, e.g. "event=0x3c,umask=0x00"). The event-open seed names these reads, repeated
// for every event, as the second cost of opening many events: the resolver can load a
// PMU afresh for every event (what perf did) or once per PMU (a cache).
//
// The parsers are pure (text in); the loader reads through a SysfsAccess so tests can
// hand it a fake tree.
//
// Example:
//   perfscale::PmuResolver resolver(perfscale::PmuCaching::kPerPmu);
//   absl::StatusOr<perf_event_attr> attr = resolver.Resolve("msr/tsc/");
#ifndef PERFSCALE_BENCHMARKS_EVENT_OPEN_PMU_SYSFS_H_
#define PERFSCALE_BENCHMARKS_EVENT_OPEN_PMU_SYSFS_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/file_reader.h"

namespace perfscale {

inline constexpr char kEventSourceDevices[] = "/sys/bus/event_source/devices";

// The attr word a format term fills.
enum class ConfigWord { kConfig, kConfig1, kConfig2, kConfig3 };

// A format/<term> file: "config:0-7,21" -> word config, bits 0..7 then 21.
struct PmuFormat {
  ConfigWord word = ConfigWord::kConfig;
  std::vector<std::pair<int, int>> ranges;  // inclusive [low, high], ascending, disjoint
  int width() const;
};

// One term of an event name or alias: "umask=0x3", "edge" (no value), "umask=?" (a
// parameter the user must supply: value absent, is_parameter set).
struct EventTerm {
  std::string name;
  std::optional<uint64_t> value;
  bool is_parameter = false;
};

// "pmu/terms/".
struct PmuEventName {
  std::string pmu;
  std::vector<EventTerm> terms;
};

// The type file: a decimal number ("9\n").
absl::StatusOr<uint32_t> ParsePmuType(absl::string_view text);
absl::StatusOr<PmuFormat> ParsePmuFormat(absl::string_view text);
// Comma-separated terms; values decimal or 0x-hex. An alias file's text, or what stands
// between an event name's slashes.
absl::StatusOr<std::vector<EventTerm>> ParseEventTerms(absl::string_view text);
// "msr/tsc/", "cpu/event=0x3c,umask=0/". Modifiers after the last slash are not supported.
absl::StatusOr<PmuEventName> ParsePmuEventName(absl::string_view text);
// perf's -e list: commas inside "pmu/.../" belong to the event.
absl::StatusOr<std::vector<std::string>> SplitEventList(absl::string_view text);

// Sets `value`'s bits into `format`'s bits of `*word` (lowest value bit into the lowest
// format bit), clearing what was there. InvalidArgument when the value does not fit.
absl::Status ApplyPmuFormat(const PmuFormat& format, uint64_t value, perf_event_attr* attr);

// What perf knows of a PMU after reading its sysfs directory.
struct PmuDescription {
  std::string name;
  uint32_t type = 0;
  std::map<std::string, PmuFormat> formats;
  std::map<std::string, std::vector<EventTerm>> aliases;
};

// Builds the attr for `terms` on `pmu`: a term is a format name (value, or 1 when
// absent), config/config1/config2/config3 (raw), or an alias (no value), expanded in
// place. Later terms win, as in perf.
absl::StatusOr<perf_event_attr> EncodePmuEvent(const PmuDescription& pmu,
                                               const std::vector<EventTerm>& terms);

// The filesystem as the loader sees it.
struct SysfsAccess {
  TextFileReader read_file;
  // Entry names of a directory, without "." and "..".
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string& path)> list_dir;
};
SysfsAccess RealSysfs();

// Reads one PMU's type, every format file and every alias (the .scale/.unit/.per-pkg/
// .snapshot companions of aliases are skipped), as perf's PMU lookup does.
absl::StatusOr<PmuDescription> LoadPmu(absl::string_view pmu, const SysfsAccess& fs,
                                       const std::string& root = kEventSourceDevices);

// "pmu/alias/" for every alias of every PMU under `root`, and "pmu/config=0/" for a PMU
// without aliases: names that resolve on this machine.
absl::StatusOr<std::vector<std::string>> ListPmuEventNames(
    const SysfsAccess& fs, const std::string& root = kEventSourceDevices);

enum class PmuCaching { kPerEvent, kPerPmu };
// "per_event", "per_pmu".
absl::StatusOr<PmuCaching> ParsePmuCaching(absl::string_view name);
const char* PmuCachingName(PmuCaching caching);

class PmuResolver {
 public:
  explicit PmuResolver(PmuCaching caching, SysfsAccess fs = RealSysfs(),
                       std::string root = kEventSourceDevices);

  absl::StatusOr<perf_event_attr> Resolve(absl::string_view event_name);
  // How many times a PMU directory was read.
  int pmu_loads() const { return pmu_loads_; }

 private:
  absl::StatusOr<const PmuDescription*> Find(const std::string& pmu);

  PmuCaching caching_;
  SysfsAccess fs_;
  std::string root_;
  std::map<std::string, PmuDescription> cache_;
  PmuDescription scratch_;  // the per-event load, kept until the next one
  int pmu_loads_ = 0;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_EVENT_OPEN_PMU_SYSFS_H_
