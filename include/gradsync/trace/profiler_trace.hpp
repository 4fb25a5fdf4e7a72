// A PyTorch profiler trace (prof.export_chrome_trace) read into the few fields gradsync uses.
// Two formats exist:
//   Legacy  torch built without Kineto (Debian's torch 1.13): a JSON list of complete ("X")
//           events with name, ts and dur in microseconds, tid, and empty args.
//   Kineto  torch 1.8+ with Kineto, all of torch 2.x: {"traceEvents": [...], "distributedInfo":
//           {"rank", "world_size", ...}}; events carry cat (cpu_op, user_annotation, kernel, …)
//           and args: "Input Dims" with record_shapes=True; record_param_comms and NCCL kernels
//           carry "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype".
// The file may be gzip-compressed (.json.gz). Errors are ConfigErrors at file:line:col.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gradsync/units/config_error.hpp"

namespace gradsync {

enum class TraceFormat { Legacy, Kineto };

// One complete ("ph": "X") event.
struct TraceEvent {
  std::string name;
  std::string cat;     // "" in the legacy format
  std::string thread;  // tid as written (a number or a string), with the pid: "pid/tid"
  double ts_us = 0.0;
  double dur_us = 0.0;
  // args of collectives (record_param_comms, NCCL kernels); unset when absent.
  std::optional<double> in_nelems;
  std::optional<double> out_nelems;
  std::optional<std::uint32_t> group_size;
  std::string dtype;       // "Float", "BFloat16", "Half", … ("" when absent)
  std::string collective;  // "allreduce", "all_gather", … ("" when absent)
  // "Sequence number" (Kineto): the autograd sequence number of an op; a forward op and the
  // backward function autograd made for it carry the same one (the trace's fwdbwd link).
  std::optional<std::int64_t> sequence;
  // "Input Dims" (record_shapes=True): elements of each input, a tensor list summed; empty
  // when the trace has no shapes.
  std::vector<double> input_elements;
  std::size_t offset = 0;  // byte offset of the event in the (decompressed) text, for errors

  [[nodiscard]] double end_us() const { return ts_us + dur_us; }
};

struct ProfilerTrace {
  std::string file;
  TraceFormat format = TraceFormat::Legacy;
  std::vector<TraceEvent> events;  // complete events, in file order
  std::optional<std::uint32_t> rank;        // distributedInfo (Kineto)
  std::optional<std::uint32_t> world_size;  // distributedInfo (Kineto)
  std::string text;  // the decompressed text, kept to turn offsets into line:col
};

// Reads and checks a trace: a JSON list of events or an object with traceEvents; every "X"
// event has a string name and numeric ts and dur ≥ 0. At most 4 GiB of text.
[[nodiscard]] ProfilerTrace read_profiler_trace(const std::filesystem::path& path);
// The same from text already in memory (`file` names it in messages).
[[nodiscard]] ProfilerTrace parse_profiler_trace(std::string text, const std::string& file);

// file:line:col of a byte offset of the trace's text.
[[nodiscard]] SourceMark trace_mark(const ProfilerTrace& trace, std::size_t offset);

}  // namespace gradsync
