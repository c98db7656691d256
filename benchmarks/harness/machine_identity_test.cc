#include "benchmarks/harness/machine_identity.h"

#include <map>

#include "gtest/gtest.h"

namespace perfscale {
namespace {

TEST(MachineIdentityTest, CountsSocketsCoresAndThreads) {
  CpuTopology cpu = ParseCpuinfo(
      "processor\t: 0\nmodel name\t: Xeon X\nmicrocode\t: 0xf4\nphysical id\t: 0\ncore id\t: 0\n\n"
      "processor\t: 1\nmodel name\t: Xeon X\nphysical id\t: 0\ncore id\t: 0\n\n"
      "processor\t: 2\nmodel name\t: Xeon X\nphysical id\t: 1\ncore id\t: 0\n");
  EXPECT_EQ(cpu.model, "Xeon X");
  EXPECT_EQ(cpu.microcode, "0xf4");
  EXPECT_EQ(cpu.sockets, 2);
  EXPECT_EQ(cpu.cores, 2);
  EXPECT_EQ(cpu.threads, 3);
  CpuTopology flat = ParseCpuinfo("processor : 0\nprocessor : 1\n");  // no topology lines
  EXPECT_EQ(flat.sockets, 1);
  EXPECT_EQ(flat.cores, 2);
  EXPECT_EQ(flat.model, "unknown");
}

TEST(MachineIdentityTest, MitigationsAreWrittenAsPythonsJsonDumps) {
  // json.dumps({"spectre_v2": "Mitigation: \"x\"", "mds": "Not affected"}, sort_keys=True)
  EXPECT_EQ(MitigationsJson({{"spectre_v2", "Mitigation: \"x\""}, {"mds", "Not affected"}}),
            "{\"mds\": \"Not affected\", \"spectre_v2\": \"Mitigation: \\\"x\\\"\"}");
  EXPECT_EQ(MitigationsJson({}), "{}");
}

TEST(MachineIdentityTest, MemoryRoundsToWholeGib) {
  EXPECT_EQ(MemoryGib("MemTotal:       24577276 kB\n"), 23);
  EXPECT_EQ(MemoryGib("MemFree: 1 kB\n"), 0);
}

TEST(MachineIdentityTest, ThisMachineHasEveryField) {
  std::map<std::string, std::string> fields;
  for (const auto& [key, value] : CollectMachineIdentity()) fields[key] = value;
  EXPECT_EQ(fields.size(), 12u);
  EXPECT_NE(fields["machine_threads"], "0");
  EXPECT_EQ(fields["machine_mitigations"].front(), '{');
}

}  // namespace
}  // namespace perfscale
