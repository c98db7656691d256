#include "benchmarks/harness/machine_identity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

std::string ReadTrimmed(const std::string& path, const char* fallback) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return fallback;
  std::string value(absl::StripAsciiWhitespace(*text));
  return value.empty() ? fallback : value;
}

// A JSON string as Python's json.dumps writes it (ensure_ascii).
std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\", std::string(1, static_cast<char>(c)));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Boost(const std::string& root) {
  absl::StatusOr<std::string> boost = ReadTextFile(root + "/sys/devices/system/cpu/cpufreq/boost");
  if (boost.ok()) return absl::StripAsciiWhitespace(*boost) == "1" ? "on" : "off";
  absl::StatusOr<std::string> no_turbo =
      ReadTextFile(root + "/sys/devices/system/cpu/intel_pstate/no_turbo");
  if (no_turbo.ok()) return absl::StripAsciiWhitespace(*no_turbo) == "1" ? "off" : "on";
  return "unknown";
}

}  // namespace

CpuTopology ParseCpuinfo(absl::string_view cpuinfo) {
  CpuTopology topology;
  bool have_model = false;
  bool have_microcode = false;
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  std::string physical;
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    std::string value(absl::StripAsciiWhitespace(kv.second));
    if (key == "processor") {
      ++topology.threads;
    } else if (key == "model name" && !have_model) {
      topology.model = value;
      have_model = true;
    } else if (key == "microcode" && !have_microcode) {
      topology.microcode = value;
      have_microcode = true;
    } else if (key == "physical id") {
      physical = value;
      sockets.insert(value);
    } else if (key == "core id") {
      cores.insert({physical, value});
    }
  }
  topology.sockets =
      !sockets.empty() ? static_cast<int>(sockets.size()) : (topology.threads ? 1 : 0);
  topology.cores = !cores.empty() ? static_cast<int>(cores.size()) : topology.threads;
  return topology;
}

std::string MitigationsJson(std::vector<std::pair<std::string, std::string>> mitigations) {
  std::sort(mitigations.begin(), mitigations.end());
  std::vector<std::string> items;
  for (const auto& [name, status] : mitigations) {
    items.push_back(absl::StrCat(JsonString(name), ": ", JsonString(status)));
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

long MemoryGib(absl::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::StartsWith(line, "MemTotal:")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    long kib = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) {
      return std::lrint(static_cast<double>(kib) / (1 << 20));  // ties to even, as round()
    }
  }
  return 0;
}

std::vector<std::pair<std::string, std::string>> CollectMachineIdentity(const std::string& root) {
  absl::StatusOr<std::string> cpuinfo = ReadTextFile(root + "/proc/cpuinfo");
  CpuTopology cpu = ParseCpuinfo(cpuinfo.ok() ? *cpuinfo : "");
  std::vector<std::pair<std::string, std::string>> mitigations;
  int nodes = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(
           root + "/sys/devices/system/cpu/vulnerabilities", error)) {
    mitigations.emplace_back(entry.path().filename().string(),
                             ReadTrimmed(entry.path().string(), ""));
  }
  for (const auto& entry :
       std::filesystem::directory_iterator(root + "/sys/devices/system/node", error)) {
    std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "node") && name.size() > 4 &&
        absl::ascii_isdigit(static_cast<unsigned char>(name[4]))) {
      ++nodes;
    }
  }
  absl::StatusOr<std::string> meminfo = ReadTextFile(root + "/proc/meminfo");
  return {
      {"machine_cpu_model", cpu.model},
      {"machine_microcode", cpu.microcode},
      {"machine_sockets", absl::StrCat(cpu.sockets)},
      {"machine_cores", absl::StrCat(cpu.cores)},
      {"machine_threads", absl::StrCat(cpu.threads)},
      {"machine_numa_nodes", absl::StrCat(nodes ? nodes : 1)},
      {"machine_memory_gib", absl::StrCat(MemoryGib(meminfo.ok() ? *meminfo : ""))},
      {"machine_governor",
       ReadTrimmed(root + "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "none")},
      {"machine_boost", Boost(root)},
      {"machine_mitigations", MitigationsJson(mitigations)},
      {"kernel_version", ReadTrimmed(root + "/proc/sys/kernel/version", "unknown")},
      {"kernel_cmdline", ReadTrimmed(root + "/proc/cmdline", "")},
  };
}

}  // namespace perfscale
