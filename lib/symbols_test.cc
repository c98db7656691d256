// The symbol parsers against fixed text and bytes, and ProcessSymbolizer against this
// test binary's own functions (their addresses are known to the test).
#include "lib/symbols.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;

TEST(ParseKallsyms, KeepsTextSymbolsAndModules) {
  absl::StatusOr<SymbolTable> table = ParseKallsyms(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000100 t osq_lock\n"
      "ffffffff81000200 D some_data\n"
      "ffffffff81000300 W weak_fn\n"
      "ffffffffc0001000 t ext4_fn\t[ext4]\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 4u);  // the data symbol is not kept
  ASSERT_NE(table->Find(0xffffffff81000150), nullptr);
  EXPECT_EQ(table->Find(0xffffffff81000150)->name, "osq_lock");
  EXPECT_EQ(table->Find(0xffffffff81000150)->dso, "[kernel.kallsyms]");
  // The data symbol does not end osq_lock: kallsyms has no sizes, so it runs on.
  EXPECT_EQ(table->Find(0xffffffff81000250)->name, "osq_lock");
  EXPECT_EQ(table->Find(0xffffffffc0001004)->name, "ext4_fn");
  EXPECT_EQ(table->Find(0xffffffffc0001004)->dso, "[ext4]");
  EXPECT_EQ(table->Find(0xffffffff80000000), nullptr);
}

TEST(ParseKallsyms, ZeroAddressesSayKptrRestrict) {
  absl::StatusOr<SymbolTable> table =
      ParseKallsyms("0000000000000000 T _stext\n0000000000000000 t osq_lock\n");
  ASSERT_FALSE(table.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(table.status()));
  EXPECT_THAT(table.status().message(), HasSubstr("kptr_restrict"));
}

TEST(ParseKallsyms, RejectsMalformedLines) {
  EXPECT_FALSE(ParseKallsyms("ffffffff81000000 T\n").ok());
  EXPECT_FALSE(ParseKallsyms("zzzz T name\n").ok());
  EXPECT_FALSE(ParseKallsyms("ffffffff81000000 TT name\n").ok());
  EXPECT_TRUE(ParseKallsyms("").ok());
}

TEST(SymbolTable, SizesEndSymbolsAndAliasesShareAnAddress) {
  SymbolTable table({{0x1000, 0x10, "a", ""}, {0x2000, 0, "b", ""}, {0x2000, 0x8, "b_alias", ""}});
  EXPECT_EQ(table.Find(0x1008)->name, "a");
  EXPECT_EQ(table.Find(0x1010), nullptr);  // past a's size, before b
  EXPECT_NE(table.Find(0x2004), nullptr);
  EXPECT_EQ(table.Find(0x2100)->name, "b");  // only the sizeless alias covers it
  EXPECT_EQ(table.Find(0xfff), nullptr);
}

TEST(ParseElfFunctions, RejectsWhatIsNotElf) {
  std::vector<uint8_t> bytes(64, 0);
  EXPECT_FALSE(ParseElfFunctions(bytes).ok());
  EXPECT_FALSE(ParseElfFunctions({}).ok());
  std::memcpy(bytes.data(), "\177ELF", 4);
  EXPECT_FALSE(ParseElfFunctions(bytes).ok());  // class and data are 0
}

// Not inlined and not static, so it has a symbol of its own in this binary.
__attribute__((noinline)) int KnownFunctionForSymbolsTest(int x) { return x * 3 + 1; }

TEST(ParseElfFunctions, FindsThisBinarysFunctions) {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  absl::StatusOr<std::vector<Symbol>> symbols = ParseElfFunctions(bytes);
  ASSERT_TRUE(symbols.ok()) << symbols.status();
  bool found = false;
  for (const Symbol& symbol : *symbols) {
    if (Demangle(symbol.name) ==
            "perfscale::(anonymous namespace)::KnownFunctionForSymbolsTest(int)" ||
        Demangle(symbol.name) == "perfscale::KnownFunctionForSymbolsTest(int)") {
      found = true;
      EXPECT_GT(symbol.size, 0u);
    }
  }
  EXPECT_TRUE(found);
  // Any cut of the file is refused or parsed, never read past its end.
  for (size_t cut : {size_t{16}, size_t{64}, bytes.size() / 2, bytes.size() - 1}) {
    (void)ParseElfFunctions(absl::MakeConstSpan(bytes.data(), cut));
  }
}

TEST(ProcessSymbolizer, ResolvesThisBinaryAndLibc) {
  ProcessSymbolizer& symbols = ProcessSymbolizer::Get();
  auto address = reinterpret_cast<uint64_t>(&KnownFunctionForSymbolsTest);
  ResolvedFrame frame = symbols.Resolve(address + 2, /*kernel=*/false);
  EXPECT_THAT(frame.symbol, HasSubstr("KnownFunctionForSymbolsTest"));
  EXPECT_EQ(frame.dso, "symbols_test");
  ResolvedFrame libc = symbols.Resolve(reinterpret_cast<uint64_t>(&::getpid), false);
  EXPECT_THAT(libc.dso, HasSubstr("libc"));
  EXPECT_THAT(libc.symbol, HasSubstr("getpid"));
  EXPECT_EQ(symbols.Resolve(16, false).dso, kUnknownDso);
  EXPECT_EQ(KnownFunctionForSymbolsTest(1), 4);
}

TEST(Demangle, CppNamesAndOthers) {
  EXPECT_EQ(Demangle("_ZN9perfscale3FooEv"), "perfscale::Foo()");
  EXPECT_EQ(Demangle("osq_lock"), "osq_lock");
  EXPECT_EQ(Demangle("_Zbroken"), "_Zbroken");
}

}  // namespace
}  // namespace perfscale
