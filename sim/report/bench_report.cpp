// The writers of `gradsync bench` (bench_report.hpp): nccl-tests' table and JSON rows, and the
// measured-beside-simulated comparison with a real nccl-tests log.
#include "gradsync/report/bench_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace gradsync {
namespace {

constexpr double kFloatBytes = 4.0;  // nccl-tests' default type: float

// "32 ranks, 8 per node", or where servers hold different numbers "12 ranks on 2 nodes: 8 + 4".
std::string ranks_text(const BenchResult& result) {
  if (result.node_sizes.empty())
    return fmt::format("{} ranks, {} per node", result.ranks, result.ranks_per_node);
  return fmt::format("{} ranks on {} nodes: {}", result.ranks, result.node_sizes.size(),
                     fmt::join(result.node_sizes, " + "));
}

// The --algo spelling: the algorithm's name, or auto.
std::string algo_name(const BenchRequest& request) {
  return request.algorithm ? std::string(to_string(*request.algorithm)) : std::string("auto");
}

bool rooted(CollectiveOp op) { return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce; }

// nccl-tests' redop column: none for the operations that reduce nothing.
std::string redop(CollectiveOp op) {
  return op == CollectiveOp::AllGather || op == CollectiveOp::Broadcast ? "none" : "sum";
}

int root_column(const BenchRequest& request) {
  return rooted(request.op) ? static_cast<int>(request.root) : -1;
}

// The nccl-tests harness a request stands for, as a comment line ("" for one GPU per thread).
std::string harness_line(const BenchRequest& request) {
  if (request.gpus_per_thread <= 1) return "";
  return fmt::format("# nccl-tests harness: {} GPUs per thread (-g {}): an iteration takes at "
                     "least {} x {:g} us of host launches ({:g} us)\n",
                     request.gpus_per_thread, request.gpus_per_thread, request.gpus_per_thread,
                     kNcclTestsLaunchPerGpuUs,
                     request.gpus_per_thread * kNcclTestsLaunchPerGpuUs);
}

// NCCL's graphs under --algo auto, as NCCL_DEBUG=INFO prints them ("Pattern 4, crossNic 0,
// nChannels 8, bw 45.000000/45.000000"): channels × bwIntra/bwInter GB/s of each graph found,
// and the channels a collective runs on, so a user can hold them against their own log.
std::string nccl_graphs_line(const BenchResult& result) {
  if (!result.nccl_view) return "";
  const NcclTopologyView& v = *result.nccl_view;
  const auto graph = [](const char* name, const NcclGraph& g) {
    return fmt::format("{} {} x {:g}/{:g}", name, g.channels, g.bw_intra, g.bw_inter);
  };
  std::string graphs = graph("ring", v.ring) + ", " + graph("tree", v.tree);
  if (v.nvls.channels > 0) graphs += ", " + graph("nvls", v.nvls);
  if (v.collnet_direct.channels > 0) graphs += ", " + graph("collnetdirect", v.collnet_direct);
  std::string run = fmt::format("{} ring/tree channels", v.comm_channels);
  if (v.nvls.channels > 0) run += fmt::format(", {} NVLS channels", v.nvls_channels);
  return fmt::format("# NCCL graphs (nChannels x bwIntra/bwInter GB/s, NCCL_DEBUG=INFO's "
                     "\"Pattern\" lines): {}; {} at most\n",
                     graphs, run);
}

}  // namespace

std::string bench_table_text(const BenchRequest& request, const BenchResult& result) {
  const std::string op(to_string(request.op));
  std::string out;
  out += fmt::format("# gradsync bench: {} on {} ({}), algorithm {}\n", op, result.topology_name,
                     ranks_text(result), algo_name(request));
  out += fmt::format("# software model: {}; fidelity: {}; channels: {}; out-of-place; "
                     "GB = 1e9 B\n#\n",
                     to_string(result.software), to_string(request.fidelity), result.channels);
  out.insert(out.size() - 2, harness_line(request) + nccl_graphs_line(result));
  const bool show_channels = result.software == SoftwareModel::Nccl;
  out += fmt::format("#{:>11} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}  {:<16}{}{}\n", "size",
                     "count", "type", "redop", "root", "time", "algbw", "busbw", "algo",
                     show_channels ? " ch" : "",
                     request.best ? "   best: algo        time    busbw" : "");
  out += fmt::format("#{:>11} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8}\n", "(B)",
                     "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const BenchRow& r : result.rows)
    out += fmt::format("{:>12.0f} {:>12} {:>8} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f}  {:<16}{}{}\n",
                       r.bytes, static_cast<long long>(r.bytes / kFloatBytes), "float",
                       redop(request.op), root_column(request), r.time_us, r.algbw, r.busbw,
                       r.label(), show_channels ? fmt::format(" {:>2}", r.channels) : "",
                       request.best ? fmt::format("   {:<14} {:>8.2f} {:>8.2f}", r.best_algorithm,
                                                  r.best_time_us, r.best_busbw)
                                    : "");
  return out;
}

nlohmann::ordered_json bench_rows_json(const BenchRequest& request, const BenchResult& result) {
  using J = nlohmann::ordered_json;
  J out = J::array();
  for (const BenchRow& r : result.rows) {
    J row = {{"bytes", r.bytes},
             {"count", static_cast<long long>(r.bytes / kFloatBytes)},
             {"type", "float"},
             {"redop", redop(request.op)},
             {"root", root_column(request)},
             {"time_us", r.time_us},
             {"algbw_GBps", r.algbw},
             {"busbw_GBps", r.busbw},
             {"op", std::string(to_string(request.op))},
             {"algorithm", r.algorithm},
             {"protocol", r.protocol.empty() ? J() : J(r.protocol)},
             {"channels", r.channels},
             {"fidelity", r.fidelity},
             {"flows", r.flows},
             {"ranks", result.ranks}};
    if (request.gpus_per_thread > 1) {
      row["gpus_per_thread"] = request.gpus_per_thread;
      row["simulated_us"] = r.simulated_us;  // the collective alone
      row["host_bound"] = r.host_bound;      // time_us is the harness's host launches
    }
    if (request.best) {
      row["best_algorithm"] = r.best_algorithm;
      row["best_time_us"] = r.best_time_us;
      row["best_busbw_GBps"] = r.best_busbw;
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<ComparedRow> compare_bench_rows(const NcclTestsLog& log, const BenchResult& result) {
  std::vector<ComparedRow> rows;
  for (std::size_t i = 0; i < log.rows.size() && i < result.rows.size(); ++i) {
    const NcclTestsRow& m = log.rows[i];
    const BenchRow& s = result.rows[i];
    rows.push_back(ComparedRow{m.bytes, m.time_us, s.time_us, m.busbw_GBps, s.busbw, s.label(),
                               m.line});
  }
  return rows;
}

nlohmann::ordered_json bench_comparison_json(const BenchRequest& request,
                                             const BenchResult& result, const NcclTestsLog& log) {
  const std::vector<ComparedRow> rows = compare_bench_rows(log, result);
  nlohmann::ordered_json out;
  out["log"] = {{"file", log.file}, {"ranks", log.ranks}, {"nodes", log.nodes()},
                {"device", log.device}, {"runs", log.runs},
                {"gpus_per_thread", log.gpus_per_thread}};
  out["gpus_per_thread"] = request.gpus_per_thread;  // the harness the simulated rows ran
  out["topology"] = result.topology_name;
  out["ranks"] = result.ranks;
  out["op"] = std::string(to_string(request.op));
  out["algo"] = algo_name(request);
  out["rows"] = nlohmann::ordered_json::array();
  for (const ComparedRow& r : rows)
    out["rows"].push_back({{"bytes", r.bytes},
                           {"line", r.line},
                           {"measured_time_us", r.measured_time_us},
                           {"simulated_time_us", r.simulated_time_us},
                           {"time_ratio", r.time_ratio()},
                           {"measured_busbw_GBps", r.measured_busbw_GBps},
                           {"simulated_busbw_GBps", r.simulated_busbw_GBps},
                           {"busbw_error", r.busbw_error()},
                           {"algorithm", r.algorithm}});
  out["bands"] = nlohmann::ordered_json::array();
  for (const BandSummary& b : summarize_bands(rows))
    out["bands"].push_back({{"band", b.band.name},
                            {"sizes", b.band.label},
                            {"rows", b.rows},
                            {"median_abs_busbw_error", b.median_abs_error},
                            {"worst_abs_busbw_error", b.worst_abs_error},
                            {"worst_bytes", b.worst_bytes},
                            {"min_time_ratio", b.min_time_ratio},
                            {"max_time_ratio", b.max_time_ratio}});
  return out;
}

std::string bench_comparison_text(const BenchRequest& request, const BenchResult& result,
                                  const NcclTestsLog& log) {
  const std::vector<ComparedRow> rows = compare_bench_rows(log, result);
  std::string out;
  out += fmt::format("# gradsync bench --compare: {} on {} ({}), algorithm {}\n",
                     to_string(request.op), result.topology_name, ranks_text(result),
                     algo_name(request));
  out += fmt::format("# measured: {} ({} ranks on {} hosts{}{}), out-of-place columns; "
                     "GB = 1e9 B\n", log.file, log.ranks, log.nodes(),
                     log.device.empty() ? "" : ", ", log.device);
  if (log.ranks > 0 && static_cast<std::uint32_t>(log.ranks) != result.ranks)
    out += fmt::format("# note: the log ran {} ranks, the simulation {}\n", log.ranks,
                       result.ranks);
  out += harness_line(request);
  out += "# error = simulated busbw / measured busbw - 1 (positive: gradsync is optimistic)\n#\n";
  out += fmt::format("#{:>11} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8}  {}\n", "size", "measured",
                     "simulated", "t x", "meas bw", "sim bw", "error", "algo");
  out += fmt::format("#{:>11} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8}\n", "(B)", "(us)", "(us)",
                     "", "(GB/s)", "(GB/s)", "");
  for (const ComparedRow& r : rows)
    out += fmt::format("{:>12.0f} {:>10.2f} {:>10.2f} {:>6.2f} {:>9.2f} {:>9.2f} {:>+7.1f}%  {}\n",
                       r.bytes, r.measured_time_us, r.simulated_time_us, r.time_ratio(),
                       r.measured_busbw_GBps, r.simulated_busbw_GBps, 100.0 * r.busbw_error(),
                       r.algorithm);
  out += "#\n# per size band: |busbw error| median and worst, simulated/measured time range\n";
  for (const BandSummary& b : summarize_bands(rows))
    out += fmt::format("# {:<8} {:<15} {:>3} rows  median {:>5.1f}%  worst {:>+6.1f}% at {:<10}"
                       "  time x {:.2f}..{:.2f}\n",
                       b.band.name, b.band.label, b.rows, 100.0 * b.median_abs_error,
                       100.0 * b.worst_error, format_size(Bytes(b.worst_bytes)), b.min_time_ratio,
                       b.max_time_ratio);
  return out;
}

}  // namespace gradsync
