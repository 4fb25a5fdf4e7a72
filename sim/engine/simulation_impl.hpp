// Internal to the engine: the state of one Simulation (simulation.hpp) and the parts of its replay,
// defined across sim/engine/: simulation.cpp (SimGrid session, platform, one run),
// transfer_start.cpp (starting Comms, step fidelity, completions), fabric_corrections.cpp
// (the fabric corrections of fabric_correction.hpp applied to flows started together) and
// flow_replay.cpp (flow fidelity with its exact reductions, flow_symmetry.hpp).
#pragma once

#include <unistd.h>

#include <csignal>

#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "gradsync/engine/simulation.hpp"
#include "gradsync/fabric/fabric_model.hpp"
#include "gradsync/fabric/nccl_model.hpp"
#include "gradsync/fabric/nccl_tuner.hpp"
#include "gradsync/platform/platform_builder.hpp"
#include "gradsync/fabric/tcp_model.hpp"
#include "fabric_correction.hpp"
#include "flow_symmetry.hpp"

namespace sg4 = simgrid::s4u;

namespace gradsync {

struct Simulation::Impl {
  static std::uint64_t pair_key(DeviceId a, DeviceId b) {
    return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
  }
  const Topology* topology = nullptr;
  Router router;
  std::vector<std::string> args_storage;
  std::vector<char*> argv;
  int argc = 0;
  std::unique_ptr<sg4::Engine> engine;
  Platform platform;
  bool built = false;
  std::uint64_t ecmp_seed = 0;

  // Flow fidelity: per device pair, the route latency is charged `steps` times plus a fixed
  // extra (the pipeline fill); absent = the route latency once (step fidelity).
  struct FlowLatency {
    double steps = 1.0;
    double extra_s = 0.0;
  };
  std::unordered_map<std::uint64_t, FlowLatency> latency_multiplier;

  // software: nccl — NCCL's per-collective and per-step overheads (nccl_model.hpp). The
  // link class of every routed pair is fixed per platform; `nccl_cost` is computed once per
  // run from NCCL's view of the plan's GPUs (nccl_tuner.hpp).
  bool nccl = false;
  std::unordered_map<std::uint64_t, LinkClass> route_class;
  std::optional<NcclStepCost> nccl_run_cost;
  // This run's protocol forwards data through the plan's stages as it arrives
  // (streams_through_stages): flow fidelity charges no pipeline fill.
  bool streamed_run = false;
  // Under NCCL, the longest route latency of the run's transfers inside a node and across
  // nodes (step fidelity), for the collective's latency (nccl_collective_latency).
  Seconds nccl_intra_route_latency{0.0};
  Seconds nccl_inter_route_latency{0.0};

  // Progress on a terminal (Simulation::set_progress): checked every kProgressStride
  // completions against the wall clock.
  static constexpr std::size_t kProgressStride = 1024;
  std::function<void(const RunProgress&)> progress;
  std::chrono::milliseconds progress_after{2000};
  std::chrono::milliseconds progress_every{500};
  std::chrono::steady_clock::time_point run_started;
  std::chrono::steady_clock::time_point progress_shown;
  std::size_t completions = 0;   // this run (or flow phase)
  std::size_t run_total = 0;
  double run_t0 = 0.0;
  void note_completion() {
    if (!progress || ++completions % kProgressStride != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - run_started < progress_after || now - progress_shown < progress_every) return;
    progress_shown = now;
    progress(RunProgress{completions, run_total, flow_mode,
                         Seconds(sg4::Engine::get_clock() - run_t0)});
  }

  // The run in progress.
  const Plan* plan = nullptr;
  const std::vector<DeviceId>* ranks = nullptr;
  std::vector<std::uint32_t> pending;        // unresolved dependencies per transfer
  std::vector<std::uint32_t> succ_offset;    // CSR: successors of transfer t are
  std::vector<TransferId> succ;              //   succ[succ_offset[t] .. succ_offset[t+1])
  // One SimGrid Comm: a transfer, or one queue pair's share of it (PlatformRoute::qp_sources).
  struct InFlight {
    sg4::CommPtr comm;
    TransferId id = kNoTransfer;
    DeviceId src = 0;
    DeviceId dst = 0;
    std::uint32_t qp = 0;
    double cap = 0.0;       // bandwidth factor set at start (capped rate / max-min share), 0 = none
    double cap_rate = 0.0;  // the capped rate behind it (B/s), 0 = none
    std::uint64_t seq = 0;  // start order
    double start_clock = 0.0;  // when it started (s) and the latency it was charged (s)
    double latency = 0.0;
  };
  std::unordered_map<const sg4::Activity*, InFlight> in_flight;
  // Corrections that cap rates: the flows in flight by start order, for their restarts.
  std::map<std::uint64_t, InFlight*> in_flight_by_start;
  std::uint64_t start_seq = 0;
  // Latency of the next Comm when set (a restarted flow's remaining latency), and the latency
  // the latency model charged last (both read or written while Comm::start() runs).
  std::optional<double> next_latency_override;
  double last_charged_latency = 0.0;
  // The fabric corrections of this topology (fabric_correction.hpp). With any, transfers
  // started at one simulated instant are gathered (`deferred`) and started together by
  // flush_deferred(), each part with the extra latency and rate cap the corrections ask.
  std::vector<std::unique_ptr<detail::FabricCorrection>> corrections;
  bool caps_rates = false;  // one of them caps rates (bandwidth factors, restarts)
  struct PartKeyHash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint32_t>& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.first * 0x9e3779b97f4a7c15ULL + k.second);
    }
  };
  // (pair, QP) -> the directed ports of its path, as the corrections see them; node-based,
  // so each vector stays where it is while parts in flight refer to it.
  std::unordered_map<std::pair<std::uint64_t, std::uint32_t>, std::vector<detail::PortHop>,
                     PartKeyHash>
      hop_cache;
  std::unordered_map<TransferId, std::uint32_t> parts_left;  // transfers split over QPs
  struct Deferred {
    DeviceId src;
    DeviceId dst;
    double wire;  // bytes on the wire
    TransferId id;
  };
  std::vector<Deferred> deferred;
  double next_extra_latency = 0.0;  // s, read by the latency model while Comm::start() runs
  double next_rate_cap = 0.0;       // bandwidth factor (0: none), read while start() runs
  std::vector<sg4::CommPtr> retired;         // the last completed Comm (see on_complete)
  std::vector<sg4::CommPtr> canceled;        // restarted flows' old Comms, until the run ends
  std::vector<TransferId> ready;             // worklist for zero-time (same-device) transfers
  double last_arrival = 0.0;
  std::unordered_map<std::uint64_t, double> pair_bytes;  // payload per routed pair, this run
  std::vector<double> bytes_a_to_b;          // per topology link, this run
  std::vector<double> bytes_b_to_a;
  std::size_t started = 0;
  // Flow fidelity: one flow per pair; completions count down.
  bool flow_mode = false;
  std::size_t flows_left = 0;
  // Flow fidelity's exact reductions (flow_symmetry.hpp; Simulation::set_symmetry), off under
  // RTT-biased TCP sharing (routes then weigh differently in SimGrid); per device its index in
  // its server (network devices: past every server index), and the shapes of this phase.
  bool symmetry = true;
  bool drop_implied_links = true;  // PlatformOptions::drop_implied_links
  bool rtt_biased = false;
  std::vector<std::uint32_t> local_order;
  std::unordered_map<std::uint64_t, detail::FlowShape> flow_shapes;

  // SimGrid's SIGINT handler calls exit() in the middle of a simulation: its atexit checks
  // then find live actions and abort ("Probable bug ... not removed", signal 6). An interrupted
  // simulation has nothing to save, so Ctrl-C ends the process at once with 128 + SIGINT.
  static void exit_at_once_on_interrupt() {
    struct sigaction sa {};
    sa.sa_handler = [](int signal) { ::_exit(128 + signal); };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
  }

  Impl(const Topology& topo, const std::vector<std::string>& simgrid_args, std::uint64_t seed)
      : topology(&topo), router(topo), ecmp_seed(seed) {
    args_storage.emplace_back("gradsync");
    args_storage.emplace_back("--log=root.thresh:warning");  // no SimGrid chatter on stderr
    args_storage.insert(args_storage.end(), simgrid_args.begin(), simgrid_args.end());
    for (auto& a : args_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    argc = static_cast<int>(args_storage.size());
    engine = std::make_unique<sg4::Engine>(&argc, argv.data());
    exit_at_once_on_interrupt();
    nccl = topo.software() == SoftwareModel::Nccl;
    corrections = detail::make_fabric_corrections(topo);
    for (const auto& c : corrections) caps_rates = caps_rates || c->caps_rates();
    rtt_biased = topo.tcp() && topo.tcp()->rtt_bias;
    std::unordered_map<int, std::uint32_t> next_local;
    local_order.resize(topo.devices().size());
    for (DeviceId d = 0; d < topo.devices().size(); ++d) {
      const int node = topo.device(d).node;
      local_order[d] = node >= 0 ? next_local[node]++ : (1U << 24) + static_cast<std::uint32_t>(d);
    }
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { on_complete(a); });
  }

  void build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs);

  Seconds base_latency(Bytes, DeviceId src, DeviceId dst, Seconds route_latency);

  // Payload per routed pair during a run (one hash update per message); spread over the
  // route's links once, when the run ends (expand_link_bytes), not once per message.
  void count_link_bytes(DeviceId src, DeviceId dst, double bytes) {
    pair_bytes[pair_key(src, dst)] += bytes;
  }

  void expand_link_bytes();

  void start_comm(DeviceId src, DeviceId dst, Bytes bytes, TransferId id);

  // Starts the Comms of one transfer: one, or one per queue pair (each wire/Q bytes from its own
  // source host), each part with its corrections' adjustment (none when empty).
  void launch(DeviceId src, DeviceId dst, double wire, TransferId id,
              std::span<const detail::StartAdjustment> adjust = {});

  // Starts one part's Comm of `payload` bytes from its source host (its QP's alias host when
  // the route has several) and records it in flight. Its rate cap goes through the
  // bandwidth-factor callback and next_latency_override (if set) through the latency model,
  // both read while Comm::start() runs.
  void start_part(InFlight part, double payload);

  // The corrections' part for a part in flight or starting.
  detail::StartingPart starting_part(const InFlight& part, double bytes, std::size_t transfer);

  // A part has ended: the corrections that cap rates restart the parts they ask for.
  void correct_after(std::uint64_t seq);

  // Suspends a flow in flight and starts its remaining bytes anew with another cap (factor
  // and rate; 0 = none), keeping its place in the start order. SimGrid cannot change a
  // running flow's rate.
  void restart(InFlight& rec, double cap, double cap_rate);

  // The directed ports of a part's path, computed once per (pair, QP).
  const std::vector<detail::PortHop>& part_hops(DeviceId src, DeviceId dst, std::uint32_t qp);

  // The path of a part.
  const Route& part_route(DeviceId src, DeviceId dst, std::uint32_t qp) const {
    const PlatformRoute* route = platform.find_route(src, dst);
    return qp < route->qp_routes.size() ? route->qp_routes[qp] : route->route;
  }
  std::size_t port_of(const Route& r, std::size_t i) const {
    return 2 * r.links[i] + (topology->link(r.links[i]).a == r.devices[i] ? 0 : 1);
  }

  // Starts the transfers deferred at this instant with their corrections' adjustments.
  void flush_deferred();

  void start_transfer(TransferId id);

  void release(TransferId id);

  // Marks `ready` transfers complete and starts successors whose dependencies are all met.
  void drain();

  void on_complete(const sg4::Activity& activity);

  PlanTiming run(const Plan& p, const std::vector<DeviceId>& rank_devices, Fidelity requested);

  void run_steps(const Plan& p);

  // A pair's route as the flow-fidelity reductions see it (flow_symmetry.hpp): its SimGrid
  // links, the latency this phase charges it, its NCCL route class, its endpoints' order in
  // their servers. Cached per phase (latencies change between phases).
  const detail::FlowShape& flow_shape(DeviceId src, DeviceId dst);

  // One flow per rank pair and phase, carrying the phase's bytes between them; phases run
  // one after another (barriers), each flow paying the phase's step latencies and fill.
  void run_flows(const Plan& p, const std::vector<DeviceId>& rank_devices);

  // One barrier-separated phase of a plan at flow fidelity: its flows between devices, and
  // the latency each device pair pays (NCCL's collective latency in the first phase).
  struct FlowBatch {
    std::vector<detail::DeviceFlow> flows;
    std::unordered_map<std::uint64_t, FlowLatency> latency;
  };
  // The phases of `p` on these devices, under the NCCL cost in nccl_run_cost.
  std::vector<FlowBatch> flow_batches(const Plan& p, const std::vector<DeviceId>& rank_devices);

  // NCCL's cost of running `p` on these devices (protocol, channels), empty without the model.
  std::optional<NcclStepCost> nccl_setup(const Plan& p, const std::vector<DeviceId>& rank_devices,
                                         std::optional<NcclProtocol>& protocol,
                                         std::uint32_t& nccl_channels) const;
  // Cancels the Comms that restarts left suspended, once a run is over.
  void retire_canceled();

  // Plans run together (concurrent_replay.cpp): per plan its phases, the next one to start,
  // the flow parts of the current one still in flight (InFlight::id is the plan's index),
  // its NCCL cost and when its last phase so far ended. Non-empty only inside run_together.
  struct TogetherRun {
    std::vector<FlowBatch> batches;
    std::size_t next = 0;
    std::size_t left = 0;
    std::optional<NcclStepCost> cost;
    double end = 0.0;
  };
  std::vector<TogetherRun> together;
  std::vector<Seconds> run_together(std::span<const PlanRun> runs);
  // Starts plan i's next phase (merge_latency: other plans start at this instant too).
  void start_together_batch(std::size_t i, bool merge_latency);
  // Plan i's phase has ended: the next one starts, if any.
  void finish_together_batch(std::size_t i);
};

}  // namespace gradsync
