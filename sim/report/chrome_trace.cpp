// The Chrome trace of `gradsync run --trace` (chrome_trace.hpp).
#include "gradsync/report/chrome_trace.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace gradsync {

// One track per GPU for compute, one per bucket for communication.
nlohmann::json chrome_trace_json(const ScenarioResult& r, const LoadedScenario& loaded) {
  constexpr std::uint32_t kMaxGpuTracks = 1024;
  nlohmann::json events = nlohmann::json::array();
  auto meta = [&](int pid, int tid, const char* what, const std::string& name) {
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", what},
                      {"args", {{"name", name}}}});
  };
  meta(1, 0, "process_name", "GPUs (compute)");
  meta(2, 0, "process_name", "communication (per bucket)");
  const std::uint32_t tracks = std::min(r.gpus, kMaxGpuTracks);
  for (std::uint32_t g = 0; g < tracks; ++g)
    meta(1, static_cast<int>(g), "thread_name", fmt::format("GPU {}", g));
  for (std::size_t b = 0; b < r.buckets.size(); ++b)
    meta(2, static_cast<int>(b), "thread_name",
         fmt::format("bucket {} ({})", b, format_size(r.buckets[b].bytes)));
  auto us = [](Seconds s) { return s.seconds() * 1e6; };
  const StepTimeline& t = r.timeline;
  for (std::uint32_t step = 0; step < loaded.scenario.training.steps; ++step) {
    const Seconds offset = t.step_time * static_cast<double>(step);
    for (std::uint32_t g = 0; g < tracks; ++g)
      for (const ComputeInterval& c : t.compute)
        events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", g}, {"cat", "compute"},
                          {"name", fmt::format("{} mb{}", to_string(c.phase), c.micro_batch)},
                          {"ts", us(offset + c.start)}, {"dur", us(c.end - c.start)}});
    for (const BucketInterval& b : t.buckets) {
      const int tid = static_cast<int>(b.bucket);
      if (b.encode_end > b.encode_start)
        events.push_back({{"ph", "X"}, {"pid", 2}, {"tid", tid}, {"cat", "codec"},
                          {"name", "encode"}, {"ts", us(offset + b.encode_start)},
                          {"dur", us(b.encode_end - b.encode_start)}});
      events.push_back({{"ph", "X"}, {"pid", 2}, {"tid", tid}, {"cat", "comm"},
                        {"name", fmt::format("{} {}", r.bucket_algorithms.at(b.bucket),
                                             format_size(r.sync_plan.buckets.at(b.bucket).bytes))},
                        {"ts", us(offset + b.start)}, {"dur", us(b.end - b.start)}});
      if (b.decode_end > b.decode_start)
        events.push_back({{"ph", "X"}, {"pid", 2}, {"tid", tid}, {"cat", "codec"},
                          {"name", "decode"}, {"ts", us(offset + b.decode_start)},
                          {"dur", us(b.decode_end - b.decode_start)}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace gradsync
