// Memory a simulation will need, checked against what the machine gives before it is spent.
// A cluster model too large for the machine is refused up front with both figures, instead
// of dying in the kernel's OOM killer (a cgroup or a full machine sends SIGKILL: no message)
// or in std::bad_alloc halfway through.
//
// The costs are measured, not derived (MemoryCost below); test/bench/memory_bench.py prints each
// estimate beside the measured peak RSS.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

// Bytes per unit of simulation state (Release build, SimGrid 3.32, x86-64), fitted to peak RSS
// of `bench` on fat-tree DGX H100 clusters (test/bench/memory_bench.py: the estimates are 0.7-1.3x
// the measured growth from 16 to 2,048 servers, ring and tree, step and flow fidelity).
struct MemoryCost {
  // One topology device or link as a SimGrid host or link, with its LMM constraint, name and
  // properties: 1.5 KB per object measured with 8 ranks at 512 and 2,048 servers, of which
  // 0.4 KB is the topology graph itself (already built when the platform is checked).
  static constexpr double kPlatformObject = 1100.0;
  // One routed device pair: its route and spread over equal-cost paths, SimGrid route, latency
  // and link-class entries, flow shape, and the flow it carries at flow fidelity. Measured
  // 2.7 KB on rings (mostly NVLink routes) and 4-5.5 KB on trees (adaptive fat-tree routes of
  // 120-420 link shares).
  static constexpr double kRoutedPair = 4000.0;
  // One transfer of a step-fidelity plan: the 28-byte Transfer, its dependency and successor
  // indices and the replay's counters: 50-56 B measured from 0.26 to 4.2M transfers (rings on
  // 16-64 servers, plan and replay together). Deep pipelines keep more Comms in flight at once (~1 KB each): 8 GPUs at
  // --pipeline 256 and 16 channels measured 165 B per transfer.
  static constexpr double kPlanTransfer = 52.0;
};

// What this process may still allocate, and what says so.
struct MemoryBudget {
  std::uint64_t bytes = 0;
  std::string source;  // e.g. "MemAvailable in /proc/meminfo", "GRADSYNC_MEMORY_LIMIT=8GB"
};

// The smallest of: GRADSYNC_MEMORY_LIMIT (a size such as "8GB", less this process's resident
// memory), each memory cgroup's limit less its usage, from this process's group up to the root
// (cgroup_memory_dirs: containers, Slurm jobs), the address
// space limit (ulimit -v) less this process's virtual size, and the kernel's MemAvailable.
// nullopt when none can be read (then nothing is refused). A malformed GRADSYNC_MEMORY_LIMIT
// is bad input: ConfigError "GRADSYNC_MEMORY_LIMIT: error: ...".
[[nodiscard]] std::optional<MemoryBudget> memory_budget();

// Throws EnvironmentError "gradsync: error: <what> needs about X GB of memory, more than the
// Y GB left to gradsync (<source>): <advice>" when `bytes` exceeds the budget. Estimates under
// 64 MB are not checked unless GRADSYNC_MEMORY_LIMIT is set. Every estimate goes to the log
// sink when one is set (the CLI sets one for GRADSYNC_MEMORY_LOG=1: test/bench/memory_bench.py).
void require_memory(double bytes, std::string_view what, std::string_view advice);
// Where require_memory() reports each estimate ("<what> needs about X MB"); none by default
// (the library never prints).
void set_memory_log(std::function<void(const std::string&)> sink);

// Parsers of the kernel's files, exposed for tests: MemAvailable of /proc/meminfo in bytes;
// a cgroup v2 memory.max or memory.current value ("max" = no limit → nullopt); VmSize/VmRSS
// of /proc/self/status in bytes.
[[nodiscard]] std::optional<std::uint64_t> meminfo_available(std::string_view meminfo);
[[nodiscard]] std::optional<std::uint64_t> cgroup_bytes(std::string_view value);
[[nodiscard]] std::optional<std::uint64_t> status_kib_field(std::string_view status,
                                                            std::string_view field);
// The memory cgroup folders whose limits apply to this process, from /proc/self/cgroup: its
// own (the v2 "0::/path" line, else v1's "N:memory:/path") and every one above it up to the
// hierarchy's root, innermost first; empty when neither is there.
struct CgroupDir {
  std::string path;  // e.g. /sys/fs/cgroup/system.slice/job_7
  bool v2 = true;    // memory.max / memory.current; v1: memory.limit_in_bytes / usage_in_bytes
};
[[nodiscard]] std::vector<CgroupDir> cgroup_memory_dirs(std::string_view proc_self_cgroup);

}  // namespace gradsync
