// The memory budget (include/gradsync/units/memory_budget.hpp): what the kernel, the cgroup, the
// address-space limit or GRADSYNC_MEMORY_LIMIT leave this process, and the up-front check.
#include "gradsync/units/memory_budget.hpp"

#include <sys/resource.h>

#include <charconv>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "gradsync/units/bounded_read.hpp"
#include "gradsync/units/config_error.hpp"
#include "gradsync/units/units.hpp"

namespace gradsync {
namespace {

// A kernel file's text (they are small: /proc/meminfo is ~1.5 KB), "" when it is not there.
std::string read_small_file(const char* path) {
  try {
    return read_file_bounded(path, 1u << 20, "1 MiB");
  } catch (const ConfigError&) {
    return {};
  }
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
  if (bytes >= 10e6) return fmt::format("{:.0f} MB", bytes / 1e6);
  return fmt::format("{:.1f} MB", bytes / 1e6);
}

std::function<void(const std::string&)>& memory_log() {
  static std::function<void(const std::string&)> sink;
  return sink;
}

}  // namespace

void set_memory_log(std::function<void(const std::string&)> sink) { memory_log() = std::move(sink); }

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

std::vector<CgroupDir> cgroup_memory_dirs(std::string_view proc_self_cgroup) {
  std::optional<CgroupDir> leaf;
  std::size_t at = 0;
  while (at < proc_self_cgroup.size()) {
    const std::size_t end = std::min(proc_self_cgroup.find('\n', at), proc_self_cgroup.size());
    const std::string_view line = proc_self_cgroup.substr(at, end - at);
    at = end + 1;
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (path.empty() || path.front() != '/') continue;
    if (path == "/") path.clear();
    if (line.substr(0, first) == "0" && controllers.empty()) {  // v2: "0::/path"
      if (!leaf) leaf = CgroupDir{"/sys/fs/cgroup" + path, true};
    } else if (!leaf || leaf->v2) {  // v1: "N:memory:/path" (controllers may be joined by commas);
                                     // a hybrid host keeps memory on v1: it wins over "0::"
      std::size_t c = 0;
      while (c <= controllers.size()) {
        const std::size_t comma = std::min(controllers.find(',', c), controllers.size());
        if (controllers.substr(c, comma - c) == "memory") {
          leaf = CgroupDir{"/sys/fs/cgroup/memory" + path, false};
          break;
        }
        c = comma + 1;
      }
    }
  }
  std::vector<CgroupDir> out;
  if (!leaf) return out;
  const std::string root = leaf->v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
  for (std::string dir = leaf->path;; dir.erase(dir.rfind('/'))) {
    out.push_back(CgroupDir{dir, leaf->v2});
    if (dir.size() <= root.size()) break;
  }
  return out;
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
  // This process's memory cgroup and every group above it (a Slurm job's limit sits on
  // job_N above the step's group; a container sees its own group as the root).
  for (const CgroupDir& dir : cgroup_memory_dirs(read_small_file("/proc/self/cgroup"))) {
    const std::string limit_file = dir.path + (dir.v2 ? "/memory.max" : "/memory.limit_in_bytes");
    const std::string usage_file = dir.path + (dir.v2 ? "/memory.current" : "/memory.usage_in_bytes");
    if (const auto limit = cgroup_bytes(read_small_file(limit_file.c_str())))
      keep_smaller(budget, left_of(*limit, cgroup_bytes(read_small_file(usage_file.c_str()))),
                   fmt::format("the cgroup limit {}", limit_file));
  }
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
  if (memory_log()) memory_log()(fmt::format("{} needs about {}", what, megabytes(bytes)));
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
