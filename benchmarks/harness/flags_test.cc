// perf-bench-style flags: the pure value parsers fed edge cases (signs, whitespace,
// overflow at the int64 limits, huge ranges, duplicates), ParseFlags over flags this test
// defines itself, and a family's typed table (defaults, --quick, rejections).
#include "benchmarks/harness/flags.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ParseIntTest, Values) {
  EXPECT_EQ(*ParseInt("5", 0, 10), 5);
  EXPECT_EQ(*ParseInt(" 7\n", 0, 10), 7);
  EXPECT_EQ(*ParseInt("-3", -5, 5), -3);
  EXPECT_EQ(*ParseInt("0", 0, 0), 0);
  EXPECT_EQ(*ParseInt("007", 0, 10), 7);
  EXPECT_EQ(*ParseInt("9223372036854775807", kMin, kMax), kMax);
  EXPECT_EQ(*ParseInt("-9223372036854775808", kMin, kMax), kMin);
}

TEST(ParseIntTest, NotIntegers) {
  for (const char* bad :
       {"", " ", "-", "--1", "+5", "abc", "5x", "1e3", "0x10", "1.0", "1 2", "1,2", "١"}) {
    absl::StatusOr<int64_t> value = ParseInt(bad, kMin, kMax);
    EXPECT_FALSE(value.ok()) << "'" << bad << "' parsed as " << *value;
    if (!value.ok()) {
      EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(absl::StrContains(value.status().message(), "is not an integer"));
    }
  }
}

TEST(ParseIntTest, OverflowIsNotAnInteger) {
  for (const char* bad :
       {"9223372036854775808", "-9223372036854775809", "99999999999999999999999999999"}) {
    absl::StatusOr<int64_t> value = ParseInt(bad, kMin, kMax);
    EXPECT_FALSE(value.ok()) << "'" << bad << "' parsed as " << *value;
  }
}

TEST(ParseIntTest, OutOfRangeNamesTheRange) {
  absl::StatusOr<int64_t> value = ParseInt("65", 0, 64);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(value.status().message(), "65 is out of range [0, 64]");
  EXPECT_FALSE(ParseInt("-1", 0, 64).ok());
  EXPECT_FALSE(ParseInt("0", 1, 100000).ok());
}

TEST(ParseIntTest, LongGarbageIsTruncatedInTheMessage) {
  std::string garbage(10000, 'x');
  absl::StatusOr<int64_t> value = ParseInt(garbage, 0, 10);
  ASSERT_FALSE(value.ok());
  EXPECT_LT(value.status().message().size(), 100u);
}

std::vector<int64_t> List(absl::string_view text, int64_t min = 0, int64_t max = 1000) {
  absl::StatusOr<std::vector<int64_t>> values = ParseIntList(text, min, max);
  EXPECT_TRUE(values.ok()) << "'" << text << "': " << values.status();
  return values.ok() ? *values : std::vector<int64_t>{-999};
}

TEST(ParseIntListTest, ValuesRangesAndMixtures) {
  EXPECT_EQ(List("0,4"), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(List("1-8"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(List("1,2,8-10"), (std::vector<int64_t>{1, 2, 8, 9, 10}));
  EXPECT_EQ(List("3-3"), (std::vector<int64_t>{3}));
  EXPECT_EQ(List(" 1 , 2 "), (std::vector<int64_t>{1, 2}));
}

TEST(ParseIntListTest, KeepsTheOrderGivenAndDropsDuplicates) {
  EXPECT_EQ(List("4,0,2"), (std::vector<int64_t>{4, 0, 2}));
  EXPECT_EQ(List("1,1,2,1-3"), (std::vector<int64_t>{1, 2, 3}));
}

TEST(ParseIntListTest, NegativeValuesAndRanges) {
  EXPECT_EQ(List("-3", -5, 5), (std::vector<int64_t>{-3}));
  EXPECT_EQ(List("-3--1", -5, 5), (std::vector<int64_t>{-3, -2, -1}));
  EXPECT_EQ(List("-1-1", -5, 5), (std::vector<int64_t>{-1, 0, 1}));
}

TEST(ParseIntListTest, Malformed) {
  for (const char* bad : {"", " ", ",", "1,", ",1", "1,,2", "a", "1-", "-", "1-2-3", "1--2", "1-a",
                          "0x4", "1;2", "1 2"}) {
    absl::StatusOr<std::vector<int64_t>> values = ParseIntList(bad, 0, 1000);
    EXPECT_FALSE(values.ok()) << "'" << bad << "' parsed";
  }
}

TEST(ParseIntListTest, DescendingRangeIsNamed) {
  absl::StatusOr<std::vector<int64_t>> values = ParseIntList("1,8-2", 0, 100);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(), "descending range '8-2'");
}

TEST(ParseIntListTest, OutOfRangeValuesAndRangeEnds) {
  EXPECT_EQ(ParseIntList("65", 0, 64).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseIntList("-1", 0, 64).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseIntList("60-70", 0, 64).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(ParseIntListTest, HugeRangesAreRefusedWithoutAllocating) {
  absl::StatusOr<std::vector<int64_t>> values = ParseIntList("0-1000000000", 0, kMax);
  ASSERT_FALSE(values.ok());
  EXPECT_TRUE(absl::StrContains(values.status().message(), "more than 4096 values"))
      << values.status();
  // Exactly 4096 values is allowed; one more across items is not.
  EXPECT_EQ(ParseIntList("1-4096", 0, kMax)->size(), 4096u);
  EXPECT_FALSE(ParseIntList("1-4096,5000", 0, kMax).ok());
  EXPECT_FALSE(ParseIntList("0-4096", 0, kMax).ok());
}

TEST(ParseIntListTest, Int64LimitsNeitherOverflowNorLoop) {
  // The span of the widest range does not fit in int64; the end of a range at INT64_MAX
  // must not be stepped past.
  EXPECT_FALSE(ParseIntList("-9223372036854775808-9223372036854775807", kMin, kMax).ok());
  EXPECT_EQ(List("9223372036854775807", kMin, kMax), (std::vector<int64_t>{kMax}));
  EXPECT_EQ(List("9223372036854775806-9223372036854775807", kMin, kMax),
            (std::vector<int64_t>{kMax - 1, kMax}));
  EXPECT_EQ(List("-9223372036854775808--9223372036854775807", kMin, kMax),
            (std::vector<int64_t>{kMin, kMin + 1}));
  EXPECT_FALSE(ParseIntList("99999999999999999999", kMin, kMax).ok());
}

std::vector<std::string> Choices(absl::string_view text) {
  absl::StatusOr<std::vector<std::string>> chosen =
      ParseChoiceList(text, {"unpinned", "same_cpu", "other_cpus"});
  EXPECT_TRUE(chosen.ok()) << "'" << text << "': " << chosen.status();
  return chosen.ok() ? *chosen : std::vector<std::string>{"<error>"};
}

TEST(ParseChoiceListTest, ChoicesInOrderWithoutDuplicates) {
  EXPECT_EQ(Choices("same_cpu"), (std::vector<std::string>{"same_cpu"}));
  EXPECT_EQ(Choices("other_cpus,unpinned"), (std::vector<std::string>{"other_cpus", "unpinned"}));
  EXPECT_EQ(Choices(" unpinned , same_cpu,unpinned\n"),
            (std::vector<std::string>{"unpinned", "same_cpu"}));
}

TEST(ParseChoiceListTest, UnknownValuesListTheAllowedOnes) {
  for (const char* bad : {"bogus", "unpinned,bogus", "UNPINNED", "same cpu", "unpinned,",
                          ",unpinned", "unpinned,,same_cpu"}) {
    absl::StatusOr<std::vector<std::string>> chosen =
        ParseChoiceList(bad, {"unpinned", "same_cpu", "other_cpus"});
    ASSERT_FALSE(chosen.ok()) << "'" << bad << "' accepted";
    EXPECT_EQ(chosen.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(
        absl::StrContains(chosen.status().message(), "(one of: unpinned, same_cpu, other_cpus)"))
        << chosen.status();
  }
  EXPECT_FALSE(ParseChoiceList("", {"a"}).ok());
  EXPECT_FALSE(ParseChoiceList("a", {}).ok());
}

// Flags owned by this test; names no family uses.
Flag& test_flag_x = DefineSuiteFlag("test_flag_x", "1", "an integer", "an integer for the test");
Flag& test_flag_y = DefineSuiteFlag("test_flag_y", "", "a list", "a list for the test", "none");
Flag& test_flag_z = DefineSuiteFlag("test_flag_z", "a,b", "a or b", "choices for the test");
Flag& test_flag_b = DefineSuiteBoolFlag("test_flag_b", false, "a boolean for the test");

// A family's table, as the families declare theirs.
enum class Color { kRed, kBlue };
const char* ColorName(Color color) { return color == Color::kRed ? "red" : "blue"; }

struct TestParams {
  std::vector<int64_t> counts;
  int size = 0;
  bool verbose = false;
  std::vector<Choice<Color>> colors;
  Choice<std::string> mode;
  std::vector<int64_t> loads;
  std::string path;
};

const FlagList<TestParams> test_flags(
    "flagtest",
    {
        IntListFlag(&TestParams::counts, "flagtest_counts", 0, 64, "counts")
            .Default("0,CPUs", [](const FlagEnv& env) { return absl::StrCat("0,", env.cpus); })
            .Quick("CPUs", [](const FlagEnv& env) { return absl::StrCat(env.cpus); }),
        IntFlag(&TestParams::size, "flagtest_size", 1, 100, "a size").Default("20").Quick("2"),
        BoolFlag(&TestParams::verbose, "flagtest_verbose", "talk more"),
        ChoiceListFlag(&TestParams::colors, "flagtest_colors",
                       ChoicesOf({Color::kRed, Color::kBlue}, ColorName), "colors")
            .Default("red,blue"),
        ChoiceFlag(&TestParams::mode, "flagtest_mode", ChoicesOf({"fast", "slow"}), "a mode")
            .Default("fast"),
        IntListFlag(&TestParams::loads, "flagtest_loads", 0, 8, "loads", {{"all", -1}})
            .Default("0,all"),
        ParsedFlag<TestParams, std::string>(
            &TestParams::path, "flagtest_path", "an absolute path",
            [](absl::string_view text) -> absl::StatusOr<std::string> {
              if (!text.empty() && text[0] != '/') {
                return absl::InvalidArgumentError("not absolute");
              }
              return std::string(text);
            },
            "a path")
            .DefaultMeans("none"),
    });

// Builds a mutable argv for ParseFlags.
class Argv {
 public:
  explicit Argv(std::vector<std::string> args) : args_(std::move(args)) {
    args_.insert(args_.begin(), "flags_test");
    for (std::string& arg : args_) pointers_.push_back(arg.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
};

class ParseFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { ResetFlagsForTest(); }
  void TearDown() override { ResetFlagsForTest(); }
  absl::Status Parse(std::vector<std::string> args) {
    Argv argv(std::move(args));
    return ParseFlags(argv.argc(), argv.argv());
  }
};

TEST_F(ParseFlagsTest, DefaultsWhenNotGiven) {
  ASSERT_TRUE(Parse({}).ok());
  EXPECT_EQ(test_flag_x.value(), "1");
  EXPECT_FALSE(test_flag_x.is_set());
  EXPECT_EQ(test_flag_y.value(), "");
  EXPECT_EQ(test_flag_z.value(), "a,b");
}

TEST_F(ParseFlagsTest, EqualsAndSeparateValueForms) {
  ASSERT_TRUE(Parse({"--test_flag_x=5", "--test_flag_y", "0,4"}).ok());
  EXPECT_EQ(test_flag_x.value(), "5");
  EXPECT_TRUE(test_flag_x.is_set());
  EXPECT_EQ(test_flag_y.value(), "0,4");
  EXPECT_TRUE(test_flag_y.is_set());
  EXPECT_FALSE(test_flag_z.is_set());
}

TEST_F(ParseFlagsTest, SeparateValueMayBeNegative) {
  ASSERT_TRUE(Parse({"--test_flag_x", "-1"}).ok());
  EXPECT_EQ(test_flag_x.value(), "-1");
}

TEST_F(ParseFlagsTest, ValuesWithEqualsSigns) {
  ASSERT_TRUE(Parse({"--test_flag_y=a=b"}).ok());
  EXPECT_EQ(test_flag_y.value(), "a=b");
}

TEST_F(ParseFlagsTest, EmptyValueIsRejectedForEveryFlag) {
  // `--passive=` once silently meant the default while `--events=` exited 2.
  for (const char* arg : {"--test_flag_x=", "--test_flag_y=", "--test_flag_z= ", "--test_flag_b=",
                          "--flagtest_counts="}) {
    absl::Status status = Parse({arg});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << arg;
    std::string name = std::string(arg).substr(0, std::string(arg).find('='));
    EXPECT_NE(status.message().find(name), absl::string_view::npos) << status.message();
    EXPECT_NE(status.message().find("empty value"), absl::string_view::npos) << status.message();
  }
}

TEST_F(ParseFlagsTest, BooleanFlags) {
  EXPECT_FALSE(test_flag_b.bool_value());
  ASSERT_TRUE(Parse({"--test_flag_b"}).ok());
  EXPECT_TRUE(test_flag_b.bool_value());
  for (const char* yes : {"true", "1", "yes"}) {
    ASSERT_TRUE(Parse({std::string("--test_flag_b=") + yes}).ok());
    EXPECT_TRUE(test_flag_b.bool_value()) << yes;
  }
  for (const char* no : {"false", "0", "no"}) {
    ASSERT_TRUE(Parse({std::string("--test_flag_b=") + no}).ok());
    EXPECT_FALSE(test_flag_b.bool_value()) << no;
  }
  // A bare boolean does not swallow the next argument as its value.
  ASSERT_TRUE(Parse({"--test_flag_b", "--test_flag_x=2"}).ok());
  EXPECT_TRUE(test_flag_b.bool_value());
  absl::Status maybe = Parse({"--test_flag_b=maybe"});
  EXPECT_EQ(maybe.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(maybe.message(),
            "--test_flag_b=maybe: 'maybe' is not a boolean (allowed: true or false)");
}

TEST_F(ParseFlagsTest, LastOneWins) {
  ASSERT_TRUE(Parse({"--test_flag_x=2", "--test_flag_x=3"}).ok());
  EXPECT_EQ(test_flag_x.value(), "3");
}

TEST_F(ParseFlagsTest, UnknownFlagIsNamed) {
  absl::Status status = Parse({"--test_flag_x=2", "--test_flag_nope=1"});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "unknown flag --test_flag_nope")) << status;
  // A prefix of a real flag is not that flag.
  EXPECT_FALSE(Parse({"--test_flag=1"}).ok());
  EXPECT_FALSE(Parse({"--test_flag_xx=1"}).ok());
}

TEST_F(ParseFlagsTest, MissingValueIsNamed) {
  absl::Status at_end = Parse({"--test_flag_x"});
  ASSERT_FALSE(at_end.ok());
  EXPECT_TRUE(absl::StrContains(at_end.message(), "flag --test_flag_x needs a value")) << at_end;
  absl::Status before_flag = Parse({"--test_flag_x", "--test_flag_y=1"});
  ASSERT_FALSE(before_flag.ok());
  EXPECT_TRUE(absl::StrContains(before_flag.message(), "--test_flag_x needs a value"))
      << before_flag;
}

TEST_F(ParseFlagsTest, PositionalArgumentsAreRejected) {
  for (const char* arg : {"positional", "-test_flag_x=1", "--", "-", ""}) {
    absl::Status status = Parse({arg});
    ASSERT_FALSE(status.ok()) << "'" << arg << "' accepted";
    EXPECT_TRUE(absl::StrContains(status.message(), "unexpected argument")) << status;
  }
  absl::Status after = Parse({"--test_flag_x=1", "stray"});
  EXPECT_TRUE(absl::StrContains(after.message(), "'stray'")) << after;
}

TEST_F(ParseFlagsTest, LeavesArgvUntouched) {
  Argv argv({"--test_flag_x=9", "--test_flag_y", "3"});
  std::vector<std::string> before(argv.argv(), argv.argv() + argv.argc());
  ASSERT_TRUE(ParseFlags(argv.argc(), argv.argv()).ok());
  std::vector<std::string> after(argv.argv(), argv.argv() + argv.argc());
  EXPECT_EQ(after, before);
}

TEST_F(ParseFlagsTest, ResetRestoresDefaults) {
  ASSERT_TRUE(Parse({"--test_flag_x=42", "--test_flag_z=c"}).ok());
  ResetFlagsForTest();
  EXPECT_EQ(test_flag_x.value(), "1");
  EXPECT_FALSE(test_flag_x.is_set());
  EXPECT_EQ(test_flag_z.value(), "a,b");
  // The references handed out by DefineFlag stay valid across a reset.
  ASSERT_TRUE(Parse({"--test_flag_x=43"}).ok());
  EXPECT_EQ(test_flag_x.value(), "43");
}

TEST_F(ParseFlagsTest, TypedDefaultsFollowTheMachineAndQuick) {
  ASSERT_TRUE(Parse({}).ok());
  absl::StatusOr<TestParams> full = test_flags.Resolve(FlagEnv{false, 8});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->counts, (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(full->size, 20);
  EXPECT_FALSE(full->verbose);
  ASSERT_EQ(full->colors.size(), 2u);
  EXPECT_EQ(full->colors[0].name, "red");
  EXPECT_EQ(full->colors[1].value, Color::kBlue);
  EXPECT_EQ(full->mode.name, "fast");
  EXPECT_EQ(full->loads, (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(full->path, "");
  absl::StatusOr<TestParams> quick = test_flags.Resolve(FlagEnv{true, 8});
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_EQ(quick->counts, (std::vector<int64_t>{8}));
  EXPECT_EQ(quick->size, 2);
  EXPECT_FALSE(test_flags.Given(&TestParams::counts));
}

TEST_F(ParseFlagsTest, TypedValuesGivenWinOverQuick) {
  ASSERT_TRUE(Parse({"--flagtest_counts=3-5", "--flagtest_size=7", "--flagtest_verbose",
                     "--flagtest_colors=blue", "--flagtest_mode=slow", "--flagtest_loads=all,2",
                     "--flagtest_path=/x"})
                  .ok());
  absl::StatusOr<TestParams> params = test_flags.Resolve(FlagEnv{true, 8});
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->counts, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(params->size, 7);
  EXPECT_TRUE(params->verbose);
  ASSERT_EQ(params->colors.size(), 1u);
  EXPECT_EQ(params->colors[0].value, Color::kBlue);
  EXPECT_EQ(params->mode.name, "slow");
  EXPECT_EQ(params->loads, (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(params->path, "/x");
  EXPECT_TRUE(test_flags.Given(&TestParams::counts));
  EXPECT_TRUE(test_flags.Given(&TestParams::verbose));
  EXPECT_EQ(test_flags.Name(&TestParams::size), "--flagtest_size");
}

TEST_F(ParseFlagsTest, TypedBadValuesNameTheFlagTheValueAndWhatIsAllowed) {
  struct Case {
    const char* arg;
    const char* message;
  };
  for (const Case& c : {
           Case{"--flagtest_counts=65",
                "--flagtest_counts=65: 65 is out of range [0, 64] (allowed: integers 0..64, as "
                "a list (0,4 or 1-8))"},
           Case{"--flagtest_size=x",
                "--flagtest_size=x: 'x' is not an integer (allowed: an integer 1..100)"},
           Case{"--flagtest_colors=green",
                "--flagtest_colors=green: unknown value 'green' (allowed: one or more of red, "
                "blue)"},
           Case{"--flagtest_mode=fast,slow",
                "--flagtest_mode=fast,slow: expected exactly one value (allowed: one of fast, "
                "slow)"},
           Case{"--flagtest_loads=some",
                "--flagtest_loads=some: 'some' is not an integer (allowed: integers 0..8 or all, "
                "as a list (0,4 or 1-8))"},
           Case{"--flagtest_path=rel",
                "--flagtest_path=rel: not absolute (allowed: an absolute path)"},
       }) {
    ResetFlagsForTest();
    ASSERT_TRUE(Parse({c.arg}).ok()) << c.arg;
    absl::StatusOr<TestParams> params = test_flags.Resolve(FlagEnv{});
    ASSERT_FALSE(params.ok()) << c.arg;
    EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(params.status().message()), std::string(c.message));
  }
  EXPECT_EQ(test_flags.Reject(&TestParams::counts, "9", "more than the slots").message(),
            "--flagtest_counts=9: more than the slots (allowed: integers 0..64, as a list (0,4 "
            "or 1-8))");
}

TEST_F(ParseFlagsTest, AFamilyFlagWithoutItsPrefixIsUnknown) {
  // The family prefix is part of the name: `--counts` is not `--flagtest_counts`.
  absl::Status parsed = Parse({"--counts=4"});
  EXPECT_EQ(parsed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(parsed.message(), "unknown flag --counts ")) << parsed;
  EXPECT_FALSE(test_flags.Given(&TestParams::counts));
}

TEST(FlagTest, AnnotatePrefixesTheFlagName) {
  EXPECT_EQ(test_flag_x.Annotate(absl::OutOfRangeError("65 is out of range")).message(),
            "--test_flag_x: 65 is out of range");
  EXPECT_EQ(test_flag_x.Annotate(absl::OutOfRangeError("x")).code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(test_flag_x.Annotate(absl::OkStatus()).ok());
}

TEST(FlagTest, HelpListsEveryFlagWithValuesAndDefaults) {
  std::string help = FlagsHelp();
  EXPECT_TRUE(absl::StrContains(help,
                                "  --test_flag_x\n      an integer for the test\n      values: an "
                                "integer\n      default: 1\n"))
      << help;
  EXPECT_TRUE(absl::StrContains(help,
                                "  --flagtest_counts\n      counts\n      values: integers 0..64, "
                                "as a list (0,4 or 1-8)\n      default: 0,CPUs\n      --quick: "
                                "CPUs\n  --flagtest_loads\n"))
      << help;
  EXPECT_TRUE(absl::StrContains(help,
                                "  --flagtest_verbose\n      talk more\n      values: true "
                                "or false\n      default: false\n"))
      << help;
  EXPECT_TRUE(absl::StrContains(help, "      default: none\n")) << help;
  // The suite's flags first, then each family's, each group sorted.
  EXPECT_LT(help.find("suite flags:"), help.find("flagtest flags:"));
  EXPECT_LT(help.find("--test_flag_x"), help.find("--test_flag_y"));
  EXPECT_LT(help.find("--flagtest_colors"), help.find("--flagtest_counts"));
}

TEST(FlagDeathTest, DefiningAFlagTwiceAborts) {
  EXPECT_DEATH(DefineSuiteFlag("test_flag_x", "2", "", "again"),
               "flag --test_flag_x is defined twice");
  EXPECT_DEATH(DefineSuiteFlag("flagtest_counts", "2", "", "again"),
               "flag --flagtest_counts is defined twice");
}

TEST(FlagDeathTest, AFamilyFlagWithoutTheFamilyPrefixAborts) {
  struct Other {
    int n = 0;
  };
  EXPECT_DEATH(FlagList<Other>("other", {IntFlag(&Other::n, "n", 0, 1, "n").Default("0")}),
               "flag --n of family other lacks the prefix other_");
}

}  // namespace
}  // namespace perfscale
