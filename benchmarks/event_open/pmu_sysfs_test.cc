// The sysfs PMU parsers on good and malformed text, the loader and resolver on a fake
// tree (so every branch is reachable on any machine), and the resolver on this machine's
// real /sys against what the kernel itself says.
#include "benchmarks/event_open/pmu_sysfs.h"

#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

TEST(ParsePmuType, Decimal) {
  EXPECT_EQ(*ParsePmuType("9\n"), 9u);
  EXPECT_EQ(*ParsePmuType("0"), 0u);
  EXPECT_EQ(*ParsePmuType(" 4294967295 "), 4294967295u);
}

TEST(ParsePmuType, Malformed) {
  for (const char* text :
       {"", "\n", "x", "-1", "0x9", "4294967296", "9 9", "99999999999999999999999"}) {
    EXPECT_FALSE(ParsePmuType(text).ok()) << "'" << text << "'";
  }
}

TEST(ParsePmuFormat, RangesAndWords) {
  absl::StatusOr<PmuFormat> format = ParsePmuFormat("config:0-7\n");
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(format->word, ConfigWord::kConfig);
  EXPECT_EQ(format->ranges, (std::vector<std::pair<int, int>>{{0, 7}}));
  EXPECT_EQ(format->width(), 8);

  format = ParsePmuFormat("config1:32-35,21,0-3");
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(format->word, ConfigWord::kConfig1);
  EXPECT_EQ(format->ranges, (std::vector<std::pair<int, int>>{{0, 3}, {21, 21}, {32, 35}}));
  EXPECT_EQ(format->width(), 9);

  EXPECT_EQ(ParsePmuFormat("config2:63")->word, ConfigWord::kConfig2);
  EXPECT_EQ(ParsePmuFormat("config:0-63")->width(), 64);
}

TEST(ParsePmuFormat, Malformed) {
  for (const char* text :
       {"", "config", "config:", "config:x", "config:7-0", "config:0-64", "config:64",
        "config4:0-7", "conf:0", ":0-7", "config:0-7,", "config:0--7", "config:0-3,2-5",
        "config:1,1", "config:-1", "config:0-7:8", "config:100"}) {
    EXPECT_FALSE(ParsePmuFormat(text).ok()) << "'" << text << "'";
  }
}

TEST(ParseEventTerms, ValuesFlagsAndParameters) {
  absl::StatusOr<std::vector<EventTerm>> terms =
      ParseEventTerms("event=0x3c,umask=0x00, edge ,cmask=12,period=?\n");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ASSERT_EQ(terms->size(), 5u);
  EXPECT_EQ((*terms)[0].name, "event");
  EXPECT_EQ((*terms)[0].value, 0x3cu);
  EXPECT_EQ((*terms)[1].value, 0u);
  EXPECT_EQ((*terms)[2].name, "edge");
  EXPECT_FALSE((*terms)[2].value.has_value());
  EXPECT_FALSE((*terms)[2].is_parameter);
  EXPECT_EQ((*terms)[3].value, 12u);
  EXPECT_TRUE((*terms)[4].is_parameter);
  EXPECT_EQ(*(*ParseEventTerms("x=0xffffffffffffffff"))[0].value, UINT64_MAX);
}

TEST(ParseEventTerms, Malformed) {
  for (const char* text :
       {"", "  \n", ",", "a,,b", "=1", "a=", "a=b", "a=0x", "a=0xg", "a=-1", "a=1=2", "a b=1",
        "a=0x10000000000000000", "a=99999999999999999999", "a/b=1", "a=1,"}) {
    EXPECT_FALSE(ParseEventTerms(text).ok()) << "'" << text << "'";
  }
}

TEST(ParsePmuEventName, Forms) {
  absl::StatusOr<PmuEventName> name = ParsePmuEventName("msr/tsc/");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->pmu, "msr");
  ASSERT_EQ(name->terms.size(), 1u);
  EXPECT_EQ(name->terms[0].name, "tsc");

  name = ParsePmuEventName("cpu_core/event=0x3c,umask=1/");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->pmu, "cpu_core");
  EXPECT_EQ(name->terms.size(), 2u);
}

TEST(ParsePmuEventName, Malformed) {
  for (const char* text :
       {"", "msr", "msr/", "msr//", "/tsc/", "msr/tsc", "msr/tsc/u", "msr/tsc/x/", "m sr/tsc/",
        "msr/t sc/", "msr/tsc=/", "cpu-clock", "sched:sched_switch"}) {
    EXPECT_FALSE(ParsePmuEventName(text).ok()) << "'" << text << "'";
  }
}

TEST(SplitEventList, CommasInsideSlashesStay) {
  absl::StatusOr<std::vector<std::string>> events =
      SplitEventList("msr/tsc/,cpu/event=1,umask=2/, software/config=0/");
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(*events,
            (std::vector<std::string>{"msr/tsc/", "cpu/event=1,umask=2/", "software/config=0/"}));
  EXPECT_EQ(*SplitEventList("a/b/"), std::vector<std::string>{"a/b/"});
}

TEST(SplitEventList, Malformed) {
  for (const char* text : {"", ",", "a/b/,", ",a/b/", "a/b/,,c/d/", "a/b", "a/b/c/"}) {
    EXPECT_FALSE(SplitEventList(text).ok()) << "'" << text << "'";
  }
}

TEST(ApplyPmuFormat, SpreadsBitsLowToHigh) {
  perf_event_attr attr{};
  PmuFormat split = *ParsePmuFormat("config:0-3,8-11");
  ASSERT_TRUE(ApplyPmuFormat(split, 0xab, &attr).ok());
  EXPECT_EQ(attr.config, 0xa0bu);
  // Re-applying clears the old bits; bits outside the format are kept.
  attr.config |= 0xf0;
  ASSERT_TRUE(ApplyPmuFormat(split, 0x01, &attr).ok());
  EXPECT_EQ(attr.config, 0x0f1u);
  EXPECT_FALSE(ApplyPmuFormat(split, 0x100, &attr).ok());  // 9 bits into 8
  PmuFormat whole = *ParsePmuFormat("config2:0-63");
  ASSERT_TRUE(ApplyPmuFormat(whole, UINT64_MAX, &attr).ok());
  EXPECT_EQ(attr.config2, UINT64_MAX);
}

// A sysfs tree in memory: path -> contents; directories are implied by paths.
class FakeSysfs {
 public:
  void Add(const std::string& path, const std::string& text) { files_[path] = text; }
  SysfsAccess Access() {
    return SysfsAccess{[this](const std::string& path) -> absl::StatusOr<std::string> {
                         ++ops;
                         auto it = files_.find(path);
                         if (it == files_.end())
                           return absl::NotFoundError(absl::StrCat("open ", path));
                         return it->second;
                       },
                       [this](const std::string& path) -> absl::StatusOr<std::vector<std::string>> {
                         ++ops;
                         std::vector<std::string> names;
                         std::string prefix = path + "/";
                         for (const auto& [file, text] : files_) {
                           if (file.compare(0, prefix.size(), prefix) != 0) continue;
                           std::string rest = file.substr(prefix.size());
                           std::string entry = rest.substr(0, rest.find('/'));
                           if (names.empty() || names.back() != entry) names.push_back(entry);
                         }
                         if (names.empty())
                           return absl::NotFoundError(absl::StrCat("opendir ", path));
                         return names;
                       }};
  }
  int ops = 0;

 private:
  std::map<std::string, std::string> files_;
};

FakeSysfs CpuLikeTree() {
  FakeSysfs fs;
  fs.Add("/d/cpu/type", "4\n");
  fs.Add("/d/cpu/format/event", "config:0-7\n");
  fs.Add("/d/cpu/format/umask", "config:8-15\n");
  fs.Add("/d/cpu/format/edge", "config:18\n");
  fs.Add("/d/cpu/format/ldlat", "config1:0-15\n");
  fs.Add("/d/cpu/events/cycles", "event=0x3c\n");
  fs.Add("/d/cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
  fs.Add("/d/cpu/events/mem-loads.scale", "1\n");  // companions are not aliases
  fs.Add("/d/cpu/events/offcore", "event=0xb7,umask=?\n");
  fs.Add("/d/plain/type", "11\n");
  return fs;
}

TEST(LoadPmu, ReadsTypeFormatsAndAliases) {
  FakeSysfs fs = CpuLikeTree();
  absl::StatusOr<PmuDescription> cpu = LoadPmu("cpu", fs.Access(), "/d");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->type, 4u);
  EXPECT_EQ(cpu->formats.size(), 4u);
  EXPECT_EQ(cpu->aliases.size(), 3u);
  EXPECT_EQ(cpu->aliases.count("mem-loads.scale"), 0u);

  absl::StatusOr<PmuDescription> plain = LoadPmu("plain", fs.Access(), "/d");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->formats.empty());
  EXPECT_TRUE(plain->aliases.empty());
}

TEST(LoadPmu, MissingAndMalformed) {
  FakeSysfs fs = CpuLikeTree();
  absl::StatusOr<PmuDescription> missing = LoadPmu("gpu", fs.Access(), "/d");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("cpu, plain"), std::string::npos) << missing.status();
  EXPECT_FALSE(LoadPmu("../etc", fs.Access(), "/d").ok());

  FakeSysfs bad_type = CpuLikeTree();
  bad_type.Add("/d/cpu/type", "four\n");
  EXPECT_TRUE(absl::IsInvalidArgument(LoadPmu("cpu", bad_type.Access(), "/d").status()));

  FakeSysfs bad_format = CpuLikeTree();
  bad_format.Add("/d/cpu/format/umask", "config:15-8\n");
  absl::Status status = LoadPmu("cpu", bad_format.Access(), "/d").status();
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_NE(status.message().find("/d/cpu/format/umask"), std::string::npos) << status;

  FakeSysfs bad_alias = CpuLikeTree();
  bad_alias.Add("/d/cpu/events/cycles", "event=\n");
  status = LoadPmu("cpu", bad_alias.Access(), "/d").status();
  EXPECT_NE(status.message().find("/d/cpu/events/cycles"), std::string::npos) << status;
}

TEST(EncodePmuEvent, AliasesFormatsRawAndOverrides) {
  FakeSysfs fs = CpuLikeTree();
  PmuDescription cpu = *LoadPmu("cpu", fs.Access(), "/d");
  absl::StatusOr<perf_event_attr> attr =
      EncodePmuEvent(cpu, ParsePmuEventName("cpu/mem-loads/")->terms);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->type, 4u);
  EXPECT_EQ(attr->size, sizeof(perf_event_attr));
  EXPECT_EQ(attr->config, 0x1cdu);
  EXPECT_EQ(attr->config1, 3u);

  // A later term overrides the alias's; a bare format term means 1.
  attr = EncodePmuEvent(cpu, ParsePmuEventName("cpu/cycles,event=0x11,edge/")->terms);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->config, 0x11u | (1u << 18));

  attr = EncodePmuEvent(cpu, ParsePmuEventName("cpu/config=0x1234,config1=7/")->terms);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->config, 0x1234u);
  EXPECT_EQ(attr->config1, 7u);
}

TEST(EncodePmuEvent, Refusals) {
  FakeSysfs fs = CpuLikeTree();
  PmuDescription cpu = *LoadPmu("cpu", fs.Access(), "/d");
  auto encode = [&](const char* name) {
    return EncodePmuEvent(cpu, ParsePmuEventName(name)->terms).status();
  };
  EXPECT_TRUE(absl::IsNotFound(encode("cpu/nosuch/")));
  EXPECT_NE(encode("cpu/nosuch/").message().find("cycles"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(encode("cpu/event=0x100/")));  // 9 bits into 8
  EXPECT_TRUE(absl::IsInvalidArgument(encode("cpu/offcore/")));      // umask=? unset
  EXPECT_TRUE(absl::IsInvalidArgument(encode("cpu/umask=?/")));
}

TEST(PmuResolver, PerEventReloadsAndPerPmuCaches) {
  FakeSysfs per_event_fs = CpuLikeTree();
  PmuResolver per_event(PmuCaching::kPerEvent, per_event_fs.Access(), "/d");
  FakeSysfs per_pmu_fs = CpuLikeTree();
  PmuResolver per_pmu(PmuCaching::kPerPmu, per_pmu_fs.Access(), "/d");
  for (int i = 0; i < 10; ++i) {
    for (const char* name : {"cpu/cycles/", "plain/config=5/"}) {
      absl::StatusOr<perf_event_attr> a = per_event.Resolve(name);
      absl::StatusOr<perf_event_attr> b = per_pmu.Resolve(name);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(a->type, b->type);
      EXPECT_EQ(a->config, b->config);
    }
  }
  EXPECT_EQ(per_event.pmu_loads(), 20);
  EXPECT_EQ(per_pmu.pmu_loads(), 2);
  EXPECT_EQ(per_event_fs.ops, 10 * per_pmu_fs.ops);
  EXPECT_FALSE(per_pmu.Resolve("cpu/tsc").ok());
  EXPECT_TRUE(absl::IsNotFound(per_pmu.Resolve("gpu/config=1/").status()));
}

TEST(ListPmuEventNames, AliasesOrRaw) {
  FakeSysfs fs = CpuLikeTree();
  absl::StatusOr<std::vector<std::string>> names = ListPmuEventNames(fs.Access(), "/d");
  ASSERT_TRUE(names.ok()) << names.status();
  // offcore needs a parameter, so it is not offered.
  EXPECT_EQ(*names, (std::vector<std::string>{"cpu/cycles/", "cpu/mem-loads/", "plain/config=0/"}));
  FakeSysfs empty;
  EXPECT_FALSE(ListPmuEventNames(empty.Access(), "/d").ok());
}

TEST(ParsePmuCaching, Names) {
  EXPECT_EQ(*ParsePmuCaching("per_event"), PmuCaching::kPerEvent);
  EXPECT_EQ(*ParsePmuCaching("per_pmu"), PmuCaching::kPerPmu);
  EXPECT_FALSE(ParsePmuCaching("cached").ok());
  EXPECT_STREQ(PmuCachingName(PmuCaching::kPerPmu), "per_pmu");
}

// This machine's sysfs: every name the default list offers resolves, to the type the
// kernel reports, and the software PMU's events really open.
TEST(RealSysfs, DefaultNamesResolveToTheKernelsTypes) {
  absl::StatusOr<std::vector<std::string>> names = ListPmuEventNames(RealSysfs());
  if (absl::IsNotFound(names.status()) && access(kEventSourceDevices, F_OK) != 0) {
    GTEST_SKIP() << "no " << kEventSourceDevices << " here";
  }
  ASSERT_TRUE(names.ok()) << names.status();
  PmuResolver resolver(PmuCaching::kPerPmu);
  for (const std::string& name : *names) {
    absl::StatusOr<perf_event_attr> attr = resolver.Resolve(name);
    ASSERT_TRUE(attr.ok()) << name << ": " << attr.status();
    std::string pmu = name.substr(0, name.find('/'));
    absl::StatusOr<std::string> type =
        ReadTextFile(absl::StrCat(kEventSourceDevices, "/", pmu, "/type"));
    ASSERT_TRUE(type.ok()) << type.status();
    EXPECT_EQ(attr->type, *ParsePmuType(*type)) << name;
  }
}

TEST(RealSysfs, SoftwarePmuEventOpens) {
  if (access("/sys/bus/event_source/devices/software/type", R_OK) != 0) {
    GTEST_SKIP() << "no software PMU in sysfs";
  }
  PmuResolver resolver(PmuCaching::kPerEvent);
  absl::StatusOr<perf_event_attr> attr =
      resolver.Resolve(absl::StrCat("software/config=", PERF_COUNT_SW_TASK_CLOCK, "/"));
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  attr->exclude_kernel = 1;  // fine at paranoid 2 for the calling thread
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(*attr, 0, -1);
  ASSERT_TRUE(event.ok()) << event.status();
  absl::StatusOr<uint64_t> count = event->ReadCount();
  EXPECT_TRUE(count.ok()) << count.status();
}

}  // namespace
}  // namespace perfscale
