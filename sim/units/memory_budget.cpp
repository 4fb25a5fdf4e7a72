// The memory budget (include/gradsync/memory_budget.hpp): what the kernel, the cgroup, the
// address-space limit or GRADSYNC_MEMORY_LIMIT leave this process, and the up-front check.
#include "gradsync/memory_budget.hpp"

#include <sys/resource.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gradsync/config_error.hpp"
#include "gradsync/units.hpp"

namespace gradsync {
namespace {

std::string read_small_file(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.size() > (1u << 20)) text.resize(1u << 20);
  return text;
}

std::optional<std::uint64_t> leading_number(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// The value of "Field:   1234 kB" in /proc/meminfo or /proc/self/status, in KiB.
std::optional<std::uint64_t> kib_field(std::string_view text, std::string_view field) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.size() > field.size() && line.substr(0, field.size()) == field &&
        line[field.size()] == ':')
      return leading_number(line.substr(field.size() + 1));
    at = end + 1;
  }
  return std::nullopt;
}

void keep_smaller(std::optional<MemoryBudget>& budget, std::uint64_t bytes, std::string source) {
  if (!budget || bytes < budget->bytes) budget = MemoryBudget{bytes, std::move(source)};
}

// `limit` less what is already used of it (nothing known: all of it).
std::uint64_t left_of(std::uint64_t limit, std::optional<std::uint64_t> used) {
  if (!used) return limit;
  return *used < limit ? limit - *used : 0;
}

std::string megabytes(double bytes) {
  if (bytes >= 10e9) return fmt::format("{:.0f} GB", bytes / 1e9);
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  return fmt::format("{:.0f} MB", bytes / 1e6);
}

}  // namespace

std::optional<std::uint64_t> meminfo_available(std::string_view meminfo) {
  const auto kib = kib_field(meminfo, "MemAvailable");
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

std::optional<std::uint64_t> cgroup_bytes(std::string_view value) {
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  if (value == "max") return std::nullopt;
  return leading_number(value);
}

std::optional<std::uint64_t> status_kib_field(std::string_view status, std::string_view field) {
  const auto kib = kib_field(status, field);
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

std::optional<MemoryBudget> memory_budget() {
  std::optional<MemoryBudget> budget;
  const std::string status = read_small_file("/proc/self/status");
  if (const char* limit = std::getenv("GRADSYNC_MEMORY_LIMIT"); limit != nullptr && *limit) {
    double bytes = 0;
    try {
      bytes = parse_size(limit).bytes();
    } catch (const UnitError& e) {
      throw ConfigError(SourceMark{"GRADSYNC_MEMORY_LIMIT", 0, 0}, e.what());
    }
    keep_smaller(budget, left_of(static_cast<std::uint64_t>(bytes), status_kib_field(status, "VmRSS")),
                 fmt::format("GRADSYNC_MEMORY_LIMIT={}", limit));
  }
  // cgroup v2 (the unified hierarchy): this process's group is /sys/fs/cgroup when it is the
  // namespace root, as in containers and Slurm's cgroup/v2 plugin with a private namespace.
  if (const auto max = cgroup_bytes(read_small_file("/sys/fs/cgroup/memory.max")))
    keep_smaller(budget, left_of(*max, cgroup_bytes(read_small_file("/sys/fs/cgroup/memory.current"))),
                 "the cgroup's memory.max");
  else if (const auto v1 = cgroup_bytes(read_small_file("/sys/fs/cgroup/memory/memory.limit_in_bytes")))
    keep_smaller(budget,
                 left_of(*v1, cgroup_bytes(read_small_file("/sys/fs/cgroup/memory/memory.usage_in_bytes"))),
                 "the cgroup's memory.limit_in_bytes");
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    keep_smaller(budget, left_of(as.rlim_cur, status_kib_field(status, "VmSize")),
                 "the address-space limit, ulimit -v");
  if (const auto available = meminfo_available(read_small_file("/proc/meminfo")))
    keep_smaller(budget, *available, "MemAvailable in /proc/meminfo");
  return budget;
}

void require_memory(double bytes, std::string_view what, std::string_view advice) {
  // Below 64 MB nothing is read (every machine gradsync runs on has that, and small plans
  // are made thousands of times per run) unless GRADSYNC_MEMORY_LIMIT asks for a budget.
  if (std::getenv("GRADSYNC_MEMORY_LOG") != nullptr)  // diagnostics: test/memory_bench.py
    std::cerr << fmt::format("gradsync: memory: {} needs about {}\n", what, megabytes(bytes));
  if (bytes < 64e6 && std::getenv("GRADSYNC_MEMORY_LIMIT") == nullptr) return;
  const std::optional<MemoryBudget> budget = memory_budget();
  if (!budget || bytes <= static_cast<double>(budget->bytes)) return;
  throw EnvironmentError(
      "gradsync", fmt::format("{} needs about {} of memory, more than the {} left to gradsync "
                              "({}): {}",
                              what, megabytes(bytes), megabytes(static_cast<double>(budget->bytes)),
                              budget->source, advice));
}

}  // namespace gradsync
