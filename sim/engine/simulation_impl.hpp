// Internal to the engine: the state of one Simulation (engine.hpp) and the parts of its replay,
// defined across sim/engine/: simulation.cpp (SimGrid session, platform, one run),
// transfer_start.cpp (starting Comms, step fidelity, completions), fabric_corrections.cpp
// (the RoCE PFC and lossy tiers and TCP incast applied to flows started together) and
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

#include "gradsync/engine.hpp"
#include "gradsync/fabric_model.hpp"
#include "gradsync/nccl_model.hpp"
#include "gradsync/nccl_tuner.hpp"
#include "gradsync/platform.hpp"
#include "gradsync/tcp_model.hpp"
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
    double cap = 0.0;       // bandwidth factor set at start (PFC rate / max-min share), 0 = none
    double cap_rate = 0.0;  // the PFC rate behind it (B/s), 0 = none
    std::uint64_t seq = 0;  // start order
    double start_clock = 0.0;  // when it started (s) and the latency it was charged (s)
    double latency = 0.0;
    const std::vector<std::pair<std::size_t, double>>* ports = nullptr;  // PFC tier: fluid_ports()
  };
  std::unordered_map<const sg4::Activity*, InFlight> in_flight;
  // PFC tier: the flows in flight in start order, so that each fixed point sees them in an
  // order that does not depend on memory addresses (a run's result must not depend on what
  // ran before it in the process).
  std::map<std::uint64_t, InFlight*> in_flight_by_start;
  std::uint64_t start_seq = 0;
  std::size_t capped_in_flight = 0;  // PFC tier: flows in flight with a PFC cap
  // Latency of the next Comm when set (a restarted flow's remaining latency), and the latency
  // the latency model charged last (both read or written while Comm::start() runs).
  std::optional<double> next_latency_override;
  double last_charged_latency = 0.0;
  // PFC fixed points (RoceTier::PfcWithoutEcn): per directed port (2·link + direction) its
  // capacity and whether it leaves a switch; the route ports of each (pair, QP); the flows of
  // the last batch (storage reused).
  std::vector<double> port_capacity;
  std::vector<bool> port_switch_egress;
  struct PartKeyHash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint32_t>& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.first * 0x9e3779b97f4a7c15ULL + k.second);
    }
  };
  // (pair, QP) -> its ports; node-based, so the vectors stay where they are (InFlight::ports).
  std::unordered_map<std::pair<std::uint64_t, std::uint32_t>,
                     std::vector<std::pair<std::size_t, double>>, PartKeyHash>
      fluid_port_cache;
  std::vector<FluidFlow> fluid_flows;
  std::unordered_map<TransferId, std::uint32_t> parts_left;  // transfers split over QPs
  // RoCE corrections applied when flows start (fabric_model.hpp): with PFC and without ECN,
  // per-ingress-port sharing and head-of-line victims as rate caps; lossy RoCE, a
  // retransmission timeout for flows whose synchronized first burst overflows a port. Flows
  // started at one simulated instant are evaluated together (`deferred`, flush_deferred()).
  enum class RoceTier { None, PfcWithoutEcn, Lossy };
  RoceTier roce_tier = RoceTier::None;
  // Ethernet (TCP) incast (tcp_model.hpp): flows started at one instant whose synchronized
  // first burst overflows the receiving port they converge on each pay rto_min once. Set when
  // the topology has a TCP model with incast on and at least one ethernet link.
  bool tcp_incast = false;
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
    if (topo.roce()) {
      bool roce_links = false;
      for (const Link& l : topo.links()) roce_links = roce_links || l.fabric == Fabric::Roce;
      if (roce_links && !topo.roce()->pfc) roce_tier = RoceTier::Lossy;
      else if (roce_links && !topo.roce()->ecn) roce_tier = RoceTier::PfcWithoutEcn;
    }
    rtt_biased = topo.tcp() && topo.tcp()->rtt_bias;
    std::unordered_map<int, std::uint32_t> next_local;
    local_order.resize(topo.devices().size());
    for (DeviceId d = 0; d < topo.devices().size(); ++d) {
      const int node = topo.device(d).node;
      local_order[d] = node >= 0 ? next_local[node]++ : (1U << 24) + static_cast<std::uint32_t>(d);
    }
    if (topo.tcp() && topo.tcp()->incast)
      for (const Link& l : topo.links()) tcp_incast = tcp_incast || l.fabric == Fabric::Ethernet;
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
  // source host). `caps`: a bandwidth factor per part (PFC rate / max-min share; 0 = none).
  void launch(DeviceId src, DeviceId dst, double wire, TransferId id,
              const std::vector<double>& caps, const std::vector<double>& cap_rates = {});

  // Starts one part's Comm of `payload` bytes from its source host (its QP's alias host when
  // the route has several) and records it in flight. Its PFC cap goes through the
  // bandwidth-factor callback and next_latency_override (if set) through the latency model,
  // both read while Comm::start() runs.
  void start_part(InFlight part, double payload);

  // PFC tier: a capped flow keeps the factor it started with (SimGrid cannot change a running
  // flow's rate), so when the congestion that capped it eases (a flow through its component
  // finishes), its remaining bytes are restarted at the rate the fixed point now gives: each
  // capped flow of the finished flow's component is re-solved uncapped (the other flows keep
  // their PFC rates), and restarted when its PFC rate rises by more than kRecoveryGain. The
  // restart pays no latency beyond what its first start had left to run. kRecoveryGain only
  // keeps small rate changes from restarting flows: on 48 RoCE-without-ECN benches (ring, tree,
  // hierarchical, PS; flow and step; 4 and 8 servers) 1.001 gives the same times as 1.05 in the
  // same wall time, 1.2 moves two of them by 0.1-0.6 %.
  static constexpr double kRecoveryGain = 1.05;
  // Appends a fluid flow (ports, rate cap in B/s) to fluid_flows[0, count), reusing storage.
  void add_fluid_flow(std::size_t& count, const std::vector<std::pair<std::size_t, double>>& ports,
                      double cap);
  // fluid_flows[0, count) = the flows in flight, in start order, capped at their PFC rates.
  std::size_t fluid_flows_in_flight();

  void recover_capped_flows(DeviceId done_src, DeviceId done_dst, std::uint32_t done_qp);

  // Suspends a flow in flight and starts its remaining bytes anew with another PFC cap (factor
  // and rate; 0 = none), keeping its place in the start order.
  void restart(InFlight& rec, double cap, double cap_rate);

  // The directed ports (2·link + direction) of a part's route, each carrying all of it, as the
  // fluid fixed points take them; computed once per (pair, QP).
  const std::vector<std::pair<std::size_t, double>>& fluid_ports(DeviceId src, DeviceId dst,
                                                                  std::uint32_t qp);

  // The directed ports (2·link + direction) of a part's path.
  const Route& part_route(DeviceId src, DeviceId dst, std::uint32_t qp) const {
    const PlatformRoute* route = platform.find_route(src, dst);
    return qp < route->qp_routes.size() ? route->qp_routes[qp] : route->route;
  }
  std::size_t port_of(const Route& r, std::size_t i) const {
    return 2 * r.links[i] + (topology->link(r.links[i]).a == r.devices[i] ? 0 : 1);
  }
  bool roce_switch_egress(const Route& r, std::size_t i) const {
    return topology->link(r.links[i]).fabric == Fabric::Roce &&
           topology->device(r.devices[i]).kind == DeviceKind::Switch;
  }

  // The receiving port of a route for TCP incast: its last ethernet link, leaving a switch and
  // entered through another link (the port whose buffer a synchronized burst fills). Returns
  // false when the route has none (no ethernet, or a host-to-host cable).
  bool tcp_receiving_port(const Route& r, std::size_t& port, std::size_t& ingress) const;

  // TCP incast over one batch of flows started together (tcp_model.hpp): per receiving port,
  // the burst is the sum over the batch's parts of min(part bytes, send_window); a port fed by
  // two or more ingress ports whose burst exceeds switch_buffer + rate x RTT (RTT = twice the
  // longest route latency through it) overflows, and every part through it pays rto_min.
  template <typename Part>
  void tcp_incast_latencies(const std::vector<Deferred>& batch, const std::vector<Part>& parts,
                            std::vector<double>& extra) const;

  // Starts the flows deferred at this instant, with the RoCE tier's caps or timeouts and the
  // TCP incast timeouts.
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
