// The format parser on format files as the kernels write them (with and without the user
// memory copies, and a __data_loc field that is no such copy), the event names, and the
// real tracefs: openat's enter event exists and parses; an unknown syscall is NotFound.
#include "benchmarks/trace_overhead/syscall_events.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// sys_enter_openat as a kernel that copies the path writes it.
constexpr char kOpenatCopying[] = R"(name: sys_enter_openat
ID: 782
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:int flags;	offset:32;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;
	field:__data_loc char[] __filename_val;	offset:48;	size:4;	signed:0;

print fmt: "dfd: 0x%08lx, filename: 0x%08lx \"%s\"", ((unsigned long)(REC->dfd)), __get_str(__filename_val)
)";

// The same event on a kernel that records the pointer only (6.18 here).
constexpr char kOpenatPointerOnly[] = R"(name: sys_enter_openat
format:
	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:const char * filename;	offset:24;	size:8;	signed:0;
print fmt: "filename: 0x%08lx", ((unsigned long)(REC->filename))
)";

TEST(ParseUserMemoryFields, FindsTheCopiedArguments) {
  EXPECT_THAT(ParseUserMemoryFields(kOpenatCopying), ElementsAre("__filename_val"));
  EXPECT_THAT(ParseUserMemoryFields(kOpenatPointerOnly), IsEmpty());
  // Two copies (linkat's old and new paths), in format order.
  EXPECT_THAT(ParseUserMemoryFields("\tfield:__data_loc char[] __oldname_val;\toffset:64;\n"
                                    "\tfield:__data_loc char[] __newname_val;\toffset:68;\n"),
              ElementsAre("__oldname_val", "__newname_val"));
  // sched_process_exec's filename is a dynamic string of the event, not a user copy.
  EXPECT_THAT(ParseUserMemoryFields("\tfield:__data_loc char[] filename;\toffset:8;\n"), IsEmpty());
  EXPECT_THAT(ParseUserMemoryFields("\tfield:__data_loc char[] ___val;\n"), IsEmpty());
  EXPECT_THAT(ParseUserMemoryFields(""), IsEmpty());
}

TEST(SyscallTracepoints, EnterAndExit) {
  EXPECT_THAT(SyscallTracepoints("write"),
              ElementsAre("syscalls:sys_enter_write", "syscalls:sys_exit_write"));
}

TEST(UserMemoryFields, ReadsThisKernelsFormat) {
  if (geteuid() != 0) GTEST_SKIP() << "tracefs formats need root here";
  absl::StatusOr<std::vector<std::string>> openat = UserMemoryFields("syscalls:sys_enter_openat");
  if (absl::IsNotFound(openat.status()) &&
      !absl::StrContains(openat.status().message(), "sys_enter_openat")) {
    GTEST_SKIP() << openat.status();  // no tracefs mounted
  }
  ASSERT_TRUE(openat.ok()) << openat.status();
  // Either the path is copied, or nothing is.
  EXPECT_TRUE(openat->empty() || *openat == std::vector<std::string>{"__filename_val"})
      << openat->size();
  absl::StatusOr<std::vector<std::string>> missing =
      UserMemoryFields("syscalls:sys_enter_perfscale_none");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "CONFIG_FTRACE_SYSCALLS"));
}

}  // namespace
}  // namespace perfscale
