// Plan replay on SimGrid (see engine.hpp). No actors: every transfer is a Comm started with
// Comm::sendto_init()/start() from Activity::on_completion callbacks, and forgotten as soon
// as it completes, so memory follows the flows in flight, not the plan's length.
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
#include <unordered_set>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <stdexcept>
#include <span>
#include <unordered_map>

#include "gradsync/engine.hpp"
#include "gradsync/fabric_model.hpp"
#include "gradsync/nccl_model.hpp"
#include "gradsync/nccl_tuner.hpp"
#include "gradsync/platform.hpp"
#include "gradsync/tcp_model.hpp"
#include "flow_symmetry.hpp"

namespace sg4 = simgrid::s4u;

namespace gradsync {

namespace {

std::uint64_t pair_key(DeviceId a, DeviceId b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
}

}  // namespace

struct Simulation::Impl {
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

  Impl(const Topology& topo, const std::vector<std::string>& simgrid_args, std::uint64_t seed)
      : topology(&topo), router(topo), ecmp_seed(seed) {
    args_storage.emplace_back("gradsync");
    args_storage.emplace_back("--log=root.thresh:warning");  // no SimGrid chatter on stderr
    args_storage.insert(args_storage.end(), simgrid_args.begin(), simgrid_args.end());
    for (auto& a : args_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    argc = static_cast<int>(args_storage.size());
    engine = std::make_unique<sg4::Engine>(&argc, argv.data());
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

  void build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs) {
    if (built) throw std::logic_error("Simulation::build called twice");
    PlatformOptions options;
    options.ecmp_seed = ecmp_seed;
    options.latency_model = [this](Bytes size, DeviceId src, DeviceId dst, Seconds route_latency) {
      const Seconds latency = next_latency_override
                                  ? Seconds(*next_latency_override)
                                  : base_latency(size, src, dst, route_latency) +
                                        Seconds(next_extra_latency);
      last_charged_latency = latency.seconds();
      return latency;
    };
    platform = build_platform(*engine, *topology, router, pairs, options);
    // PFC rates of the RoCE tier. SimGrid 3.32 honours neither Comm::set_rate() on
    // host-to-host Comms nor a bound from the bandwidth factor f under CM02: f only scales what
    // a flow delivers (its max-min share x f). So a flow whose PFC rate is below its max-min
    // share at start gets f = PFC rate / max-min share: it holds its share of the links (the
    // time PFC keeps them paused) and delivers the PFC rate while that congestion lasts; when
    // it eases, recover_capped_flows() restarts the flow's remainder at its new rate.
    if (roce_tier == RoceTier::PfcWithoutEcn) {
      const auto& links = topology->links();
      port_capacity.resize(2 * links.size());
      port_switch_egress.assign(2 * links.size(), false);
      for (LinkId id = 0; id < links.size(); ++id) {
        port_capacity[2 * id] = port_capacity[2 * id + 1] =
            links[id].effective_bandwidth().bytes_per_second();
        port_switch_egress[2 * id] = links[id].fabric == Fabric::Roce &&
                                     topology->device(links[id].a).kind == DeviceKind::Switch;
        port_switch_egress[2 * id + 1] = links[id].fabric == Fabric::Roce &&
                                         topology->device(links[id].b).kind == DeviceKind::Switch;
      }
    }
    if (roce_tier == RoceTier::PfcWithoutEcn)
      engine->get_netzone_root()->get_network_model()->set_bw_factor_cb(
          [this](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                 const std::unordered_set<sg4::NetZone*>&) {
            return next_rate_cap > 0.0 ? next_rate_cap : 1.0;
          });
    for (const PlatformRoute& r : platform.routes)
      route_class[pair_key(r.src, r.dst)] = route_link_class(*topology, r.route);
    built = true;
  }

  Seconds base_latency(Bytes, DeviceId src, DeviceId dst, Seconds route_latency) {
    {
      const std::uint64_t key = pair_key(src, dst);
      const auto it = latency_multiplier.find(key);
      if (it != latency_multiplier.end())  // flow fidelity: the phase's whole latency
        return route_latency * it->second.steps + Seconds(it->second.extra_s);
      // Step fidelity under NCCL: the collective's latency is charged once, from NCCL's model
      // (run()), and the flows carry the bandwidth; their route latencies set the per-step
      // latency where they exceed NCCL's per-hop value (nccl_collective_latency).
      if (nccl_run_cost) {
        const auto c = route_class.find(key);
        Seconds& longest = c != route_class.end() && c->second != LinkClass::Net
                               ? nccl_intra_route_latency : nccl_inter_route_latency;
        longest = std::max(longest, route_latency);
        return Seconds(0.0);
      }
      return route_latency;
    }
  }

  // Payload per routed pair during a run (one hash update per message); spread over the
  // route's links once, when the run ends (expand_link_bytes), not once per message.
  void count_link_bytes(DeviceId src, DeviceId dst, double bytes) {
    pair_bytes[pair_key(src, dst)] += bytes;
  }

  void expand_link_bytes() {
    bytes_a_to_b.assign(topology->links().size(), 0.0);
    bytes_b_to_a.assign(topology->links().size(), 0.0);
    for (const auto& [key, bytes] : pair_bytes) {
      const PlatformRoute* route = platform.find_route(static_cast<DeviceId>(key >> 32),
                                                       static_cast<DeviceId>(key & 0xffffffffULL));
      if (route == nullptr) continue;
      if (!route->link_shares.empty()) {  // QPs or adaptive spreading: bytes × share per link
        for (const LinkShare& s : route->link_shares)
          (topology->link(s.link).a == s.from ? bytes_a_to_b : bytes_b_to_a)[s.link] +=
              bytes * s.share;
        continue;
      }
      const auto& devices = route->route.devices;
      const auto& links = route->route.links;
      for (std::size_t i = 0; i < links.size(); ++i) {
        const Link& l = topology->link(links[i]);
        (devices[i] == l.a ? bytes_a_to_b : bytes_b_to_a)[links[i]] += bytes;
      }
    }
    pair_bytes.clear();
  }

  void start_comm(DeviceId src, DeviceId dst, Bytes bytes, TransferId id) {
    count_link_bytes(src, dst, bytes.bytes());
    // NCCL protocols below Simple's bandwidth (LL, LL128, Tree's correction) move the same
    // payload more slowly: send bytes / factor (LL's flag words really do cross the links).
    // NVLSTree's network legs have their own factor (one route-class lookup, only then).
    double factor = nccl_run_cost ? nccl_run_cost->bandwidth_factor : 1.0;
    if (nccl_run_cost && nccl_run_cost->bandwidth_factor_net != factor) {
      const auto c = route_class.find(pair_key(src, dst));
      if (c == route_class.end() || c->second == LinkClass::Net)
        factor = nccl_run_cost->bandwidth_factor_net;
    }
    const double wire = factor > 0.0 ? bytes.bytes() / factor : bytes.bytes();
    if (roce_tier != RoceTier::None || tcp_incast) {
      deferred.push_back(Deferred{src, dst, wire, id});
      return;
    }
    launch(src, dst, wire, id, {});
  }

  // Starts the Comms of one transfer: one, or one per queue pair (each wire/Q bytes from its own
  // source host). `caps`: a bandwidth factor per part (PFC rate / max-min share; 0 = none).
  void launch(DeviceId src, DeviceId dst, double wire, TransferId id,
              const std::vector<double>& caps, const std::vector<double>& cap_rates = {}) {
    const PlatformRoute* route = platform.find_route(src, dst);
    const std::size_t parts =
        route != nullptr && !route->qp_sources.empty() ? route->qp_sources.size() : 1;
    if (parts > 1) {
      if (flow_mode) flows_left += parts - 1;
      else parts_left[id] = static_cast<std::uint32_t>(parts);
    }
    for (std::size_t q = 0; q < parts; ++q) {
      InFlight part;
      part.id = id;
      part.src = src;
      part.dst = dst;
      part.qp = static_cast<std::uint32_t>(q);
      part.cap = q < caps.size() ? caps[q] : 0.0;
      part.cap_rate = q < cap_rates.size() ? cap_rates[q] : 0.0;
      part.seq = ++start_seq;
      if (roce_tier == RoceTier::PfcWithoutEcn) part.ports = &fluid_ports(src, dst, part.qp);
      ++started;
      start_part(std::move(part), wire / static_cast<double>(parts));
    }
  }

  // Starts one part's Comm of `payload` bytes from its source host (its QP's alias host when
  // the route has several) and records it in flight. Its PFC cap goes through the
  // bandwidth-factor callback and next_latency_override (if set) through the latency model,
  // both read while Comm::start() runs.
  void start_part(InFlight part, double payload) {
    const PlatformRoute* route = platform.find_route(part.src, part.dst);
    sg4::Host* from = route != nullptr && !route->qp_sources.empty()
                          ? route->qp_sources[part.qp]
                          : platform.device_hosts.at(part.src);
    auto comm = sg4::Comm::sendto_init(from, platform.device_hosts.at(part.dst));
    comm->set_payload_size(static_cast<std::uint64_t>(std::llround(payload)));
    part.comm = comm;
    part.start_clock = sg4::Engine::get_clock();
    next_rate_cap = part.cap;
    InFlight& rec = in_flight.emplace(comm.get(), std::move(part)).first->second;
    if (roce_tier == RoceTier::PfcWithoutEcn) {
      in_flight_by_start.emplace(rec.seq, &rec);
      if (rec.cap_rate > 0.0) ++capped_in_flight;
    }
    comm->start();
    rec.latency = last_charged_latency;
    next_rate_cap = 0.0;
  }

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
                      double cap) {
    if (count == fluid_flows.size()) fluid_flows.emplace_back();
    FluidFlow& f = fluid_flows[count++];
    f.cap = cap;
    f.ports.assign(ports.begin(), ports.end());
  }
  // fluid_flows[0, count) = the flows in flight, in start order, capped at their PFC rates.
  std::size_t fluid_flows_in_flight() {
    std::size_t count = 0;
    for (const auto& [seq, f] : in_flight_by_start) add_fluid_flow(count, *f->ports, f->cap_rate);
    return count;
  }

  void recover_capped_flows(DeviceId done_src, DeviceId done_dst, std::uint32_t done_qp) {
    if (capped_in_flight == 0) return;
    std::vector<FluidFlow>& flows = fluid_flows;
    const std::size_t count = fluid_flows_in_flight();
    std::vector<InFlight*> records;  // same order as the flows
    records.reserve(count);
    for (const auto& [seq, f] : in_flight_by_start) records.push_back(f);
    const std::span<const FluidFlow> all(flows.data(), count);
    std::vector<std::size_t> seed_ports;
    for (const auto& [p, c] : fluid_ports(done_src, done_dst, done_qp)) seed_ports.push_back(p);
    const std::vector<std::size_t> members =
        connected_flows(all, port_capacity.size(), {}, seed_ports);
    bool any = false;
    for (std::size_t f : members)
      if (flows[f].cap > 0.0) {
        flows[f].cap = 0.0;  // a candidate: re-solved free of its old cap
        any = true;
      }
    if (!any) return;
    const NewFlowRates rates = pfc_rates_on(all, port_capacity, port_switch_egress, members);
    for (std::size_t k = 0; k < members.size(); ++k) {
      InFlight& rec = *records[members[k]];
      if (!(rec.cap_rate > 0.0)) continue;
      const double pfc = rates.pfc[k];
      const double fair = rates.fair[k];
      if (!(pfc > rec.cap_rate * kRecoveryGain)) continue;
      const bool still_capped = std::isfinite(pfc) && pfc > 0.0 && pfc < fair * (1.0 - 1e-6);
      restart(rec, still_capped ? pfc / fair : 0.0, still_capped ? pfc : 0.0);
    }
  }

  // Suspends a flow in flight and starts its remaining bytes anew with another PFC cap (factor
  // and rate; 0 = none), keeping its place in the start order.
  void restart(InFlight& rec, double cap, double cap_rate) {
    const double remaining = rec.comm->get_remaining();
    if (!(remaining >= 1.0)) return;
    const double now = sg4::Engine::get_clock();
    const double latency_left = std::max(0.0, rec.start_clock + rec.latency - now);
    InFlight next = rec;  // same pair, QP and place in the start order
    next.cap = cap;
    next.cap_rate = cap_rate;
    const sg4::Activity* old_activity = rec.comm.get();
    sg4::CommPtr old = rec.comm;
    in_flight_by_start.erase(rec.seq);
    in_flight.erase(old_activity);  // `rec` is gone from here on
    --capped_in_flight;
    // Suspended, the old Comm holds no bandwidth (its variable weighs nothing in the max-min
    // system); it is dropped when the run ends. (A cancelled Comm's action keeps its share
    // until SimGrid frees it, which it does only once nothing references the Comm.)
    old->suspend();
    canceled.push_back(std::move(old));
    next_latency_override = latency_left;
    start_part(std::move(next), remaining);
    next_latency_override.reset();
  }

  // The directed ports (2·link + direction) of a part's route, each carrying all of it, as the
  // fluid fixed points take them; computed once per (pair, QP).
  const std::vector<std::pair<std::size_t, double>>& fluid_ports(DeviceId src, DeviceId dst,
                                                                  std::uint32_t qp) {
    auto& ports = fluid_port_cache[{pair_key(src, dst), qp}];
    if (ports.empty()) {
      const Route& r = part_route(src, dst, qp);
      for (std::size_t i = 0; i < r.links.size(); ++i) ports.emplace_back(port_of(r, i), 1.0);
    }
    return ports;
  }

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
  bool tcp_receiving_port(const Route& r, std::size_t& port, std::size_t& ingress) const {
    for (std::size_t i = r.links.size(); i-- > 0;) {
      if (topology->link(r.links[i]).fabric != Fabric::Ethernet) continue;
      if (i == 0 || topology->device(r.devices[i]).kind != DeviceKind::Switch) return false;
      port = port_of(r, i);
      ingress = port_of(r, i - 1);
      return true;
    }
    return false;
  }

  // TCP incast over one batch of flows started together (tcp_model.hpp): per receiving port,
  // the burst is the sum over the batch's parts of min(part bytes, send_window); a port fed by
  // two or more ingress ports whose burst exceeds switch_buffer + rate x RTT (RTT = twice the
  // longest route latency through it) overflows, and every part through it pays rto_min.
  template <typename Part>
  void tcp_incast_latencies(const std::vector<Deferred>& batch, const std::vector<Part>& parts,
                            std::vector<double>& extra) const {
    const TcpOptions& tcp = *topology->tcp();
    struct PortBurst {
      double bytes = 0.0;
      double latency_s = 0.0;  // longest route latency through the port
      std::size_t ingress = 0;
      bool converging = false;  // fed by two or more ingress ports
    };
    std::unordered_map<std::size_t, PortBurst> ports;
    std::vector<std::size_t> port_of_part(parts.size(), std::numeric_limits<std::size_t>::max());
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const Deferred& d = batch[parts[k].batch_index];
      const Route& r = part_route(d.src, d.dst, parts[k].qp);
      std::size_t port = 0, ingress = 0;
      if (!tcp_receiving_port(r, port, ingress)) continue;
      const PlatformRoute* route = platform.find_route(d.src, d.dst);
      const double bytes =
          d.wire / static_cast<double>(std::max<std::size_t>(route->qp_sources.size(), 1));
      auto [it, fresh] = ports.try_emplace(port);
      PortBurst& b = it->second;
      if (fresh) b.ingress = ingress;
      else if (b.ingress != ingress) b.converging = true;
      b.bytes += tcp_burst_bytes(tcp, Bytes(bytes)).bytes();
      b.latency_s = std::max(b.latency_s, route->latency.seconds());
      port_of_part[k] = port;
    }
    const auto& links = topology->links();
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (port_of_part[k] == std::numeric_limits<std::size_t>::max()) continue;
      const PortBurst& b = ports.at(port_of_part[k]);
      const bool overflowing =
          b.converging &&
          tcp_burst_overflows(tcp, Bytes(b.bytes), links[port_of_part[k] / 2].effective_bandwidth(),
                              Seconds(2.0 * b.latency_s));
      double& e = extra[parts[k].batch_index];
      e = std::max(e, tcp_incast_latency(tcp, overflowing).seconds());
    }
  }

  // Starts the flows deferred at this instant, with the RoCE tier's caps or timeouts and the
  // TCP incast timeouts.
  void flush_deferred() {
    if (deferred.empty()) return;
    std::vector<Deferred> batch;
    batch.swap(deferred);
    struct Part {
      std::size_t batch_index;
      std::uint32_t qp;
    };
    // PFC tier: the fluid flows of this batch, the in-flight ones then the new parts.
    std::vector<FluidFlow>& flows = fluid_flows;
    std::size_t flow_count = roce_tier == RoceTier::PfcWithoutEcn ? fluid_flows_in_flight() : 0;
    std::vector<Part> parts;  // the new flows' parts, after the in-flight ones in `flows`
    const std::size_t first_new = flow_count;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const PlatformRoute* route = platform.find_route(batch[b].src, batch[b].dst);
      const std::size_t n = route != nullptr && !route->qp_sources.empty() ? route->qp_sources.size() : 1;
      for (std::uint32_t q = 0; q < n; ++q) {
        parts.push_back(Part{b, q});
        if (roce_tier == RoceTier::PfcWithoutEcn)
          add_fluid_flow(flow_count, fluid_ports(batch[b].src, batch[b].dst, q), 0.0);
      }
    }
    std::vector<std::vector<double>> caps(batch.size()), cap_rates(batch.size());
    std::vector<double> extra(batch.size(), 0.0);
    const auto& links = topology->links();
    if (roce_tier == RoceTier::PfcWithoutEcn) {
      const NewFlowRates rates =
          pfc_rates_of_new(std::span<const FluidFlow>(flows.data(), flow_count), port_capacity,
                           port_switch_egress, first_new);
      const std::vector<double>& fair = rates.fair;
      const std::vector<double>& pfc = rates.pfc;
      for (std::size_t k = 0; k < parts.size(); ++k) {
        const std::size_t f = k;
        auto& c = caps[parts[k].batch_index];
        auto& r = cap_rates[parts[k].batch_index];
        c.resize(parts[k].qp + 1, 0.0);
        r.resize(parts[k].qp + 1, 0.0);
        if (std::isfinite(pfc[f]) && pfc[f] > 0.0 && pfc[f] < fair[f] * (1.0 - 1e-6)) {
          c[parts[k].qp] = pfc[f] / fair[f];
          r[parts[k].qp] = pfc[f];  // the fluid model of later batches takes the rate (B/s)
        }
      }
    } else if (roce_tier == RoceTier::Lossy) {
      // Synchronized first burst: per switch egress port, the batch's parts each put
      // min(part bytes, bdp) on it; a part whose port overflows waits for a timeout.
      std::unordered_map<std::size_t, double> burst;
      auto bdp_of = [&](const Deferred& d, std::size_t port) {
        const PlatformRoute* route = platform.find_route(d.src, d.dst);
        return links[port / 2].effective_bandwidth().bytes_per_second() * 2.0 *
               route->latency.seconds();
      };
      for (const Part& part : parts) {
        const Deferred& d = batch[part.batch_index];
        const Route& r = part_route(d.src, d.dst, part.qp);
        const double bytes = d.wire / static_cast<double>(std::max<std::size_t>(
                                          platform.find_route(d.src, d.dst)->qp_sources.size(), 1));
        for (std::size_t i = 0; i < r.links.size(); ++i)
          if (roce_switch_egress(r, i)) burst[port_of(r, i)] += std::min(bytes, bdp_of(d, port_of(r, i)));
      }
      for (const Part& part : parts) {
        const Deferred& d = batch[part.batch_index];
        const Route& r = part_route(d.src, d.dst, part.qp);
        for (std::size_t i = 0; i < r.links.size(); ++i)
          if (roce_switch_egress(r, i) &&
              lossy_burst_overflows(Bytes(burst[port_of(r, i)]), Bytes(bdp_of(d, port_of(r, i))),
                                    topology->roce()->buffer))
            extra[part.batch_index] = topology->roce()->retransmit_timeout.seconds();
      }
    }
    if (tcp_incast) tcp_incast_latencies(batch, parts, extra);
    for (std::size_t b = 0; b < batch.size(); ++b) {
      next_extra_latency = extra[b];
      launch(batch[b].src, batch[b].dst, batch[b].wire, batch[b].id, caps[b], cap_rates[b]);
    }
    next_extra_latency = 0.0;
  }

  void start_transfer(TransferId id) {
    const Transfer& t = plan->transfers[id];
    const DeviceId src = (*ranks)[t.src];
    const DeviceId dst = (*ranks)[t.dst];
    if (src == dst) {
      ready.push_back(id);  // same GPU: no network, completes at once
      return;
    }
    start_comm(src, dst, plan->bytes_of(t), id);
  }

  void release(TransferId id) {
    ready.push_back(id);
    drain();
  }

  // Marks `ready` transfers complete and starts successors whose dependencies are all met.
  void drain() {
    while (!ready.empty()) {
      const TransferId done = ready.back();
      ready.pop_back();
      note_completion();  // every transfer once, whatever its parts
      last_arrival = std::max(last_arrival, sg4::Engine::get_clock());
      for (std::uint32_t i = succ_offset[done]; i < succ_offset[done + 1]; ++i) {
        const TransferId s = succ[i];
        if (--pending[s] == 0) start_transfer(s);
      }
    }
    flush_deferred();
  }

  void on_complete(const sg4::Activity& activity) {
    const auto it = in_flight.find(&activity);
    if (it == in_flight.end()) return;
    const TransferId id = it->second.id;
    // SimGrid still uses this Comm after the callback returns: keep it until the next
    // completion (by then its handling is over), so at most one finished Comm stays alive.
    retired.clear();
    retired.push_back(std::move(it->second.comm));
    const DeviceId done_src = it->second.src;
    const DeviceId done_dst = it->second.dst;
    const std::uint32_t done_qp = it->second.qp;
    if (roce_tier == RoceTier::PfcWithoutEcn && it->second.cap_rate > 0.0) --capped_in_flight;
    in_flight_by_start.erase(it->second.seq);
    in_flight.erase(it);
    if (roce_tier == RoceTier::PfcWithoutEcn) recover_capped_flows(done_src, done_dst, done_qp);
    if (flow_mode) {
      note_completion();  // every flow part (run_total counts them)
      last_arrival = std::max(last_arrival, sg4::Engine::get_clock());
      --flows_left;
      return;
    }
    if (const auto parts = parts_left.find(id); parts != parts_left.end()) {
      if (--parts->second > 0) return;  // other queue pairs of this transfer still in flight
      parts_left.erase(parts);
    }
    ready.push_back(id);
    drain();
  }

  PlanTiming run(const Plan& p, const std::vector<DeviceId>& rank_devices, Fidelity requested) {
    if (!built) build(device_pairs(p, rank_devices));
    if (rank_devices.size() < p.ranks)
      throw std::logic_error("Simulation::run_plan: fewer devices than ranks");
    plan = &p;
    ranks = &rank_devices;
    started = 0;
    pair_bytes.clear();
    const double t0 = sg4::Engine::get_clock();
    last_arrival = t0;
    run_t0 = t0;
    run_started = progress_shown = std::chrono::steady_clock::now();
    progress_shown -= progress_every;
    completions = 0;
    run_total = plan_transfer_count(p);
    const Fidelity fidelity = resolve_fidelity(requested, p);
    nccl_run_cost.reset();
    nccl_intra_route_latency = nccl_inter_route_latency = Seconds(0.0);
    std::optional<NcclProtocol> protocol;
    std::uint32_t nccl_channels = 0;
    if (nccl && p.ranks > 1) {
      // NCCL's view of the plan's GPUs (the contributors; NVLS plans add switch ranks after
      // them): its graph channels and ring bandwidth set the protocol caps, as in NCCL.
      const std::uint32_t gpus = p.contributors > 0 ? p.contributors : p.ranks;
      const std::vector<DeviceId> gpu_devices(rank_devices.begin(), rank_devices.begin() + gpus);
      std::set<int> nodes;
      for (DeviceId d : gpu_devices) nodes.insert(topology->device(d).node);
      const auto node_count = static_cast<std::uint32_t>(std::max<std::size_t>(nodes.size(), 1));
      const std::optional<Algorithm> in_switch =
          p.algorithm == Algorithm::Nvls || p.algorithm == Algorithm::NvlsTree
              ? std::optional<Algorithm>(p.algorithm) : std::nullopt;
      const NcclTopologyView view =
          nccl_topology_view(*topology, gpu_devices, gpus / node_count, in_switch);
      NcclOptions options = nccl_options(view, p.algorithm);
      // The channels NCCL runs this size on (Ring, Tree, NVLS, NVLSTree; the others are
      // gradsync's what-ifs, costed as rings on every channel).
      // NCCL's protocol for it (a tuner rule's, else the fastest predicted).
      if (p.algorithm == Algorithm::Ring || p.algorithm == Algorithm::Tree ||
          p.algorithm == Algorithm::Nvls || p.algorithm == Algorithm::NvlsTree) {
        const NcclTuning tuned = nccl_tune(view, p.op, p.total_bytes, {p.algorithm});
        nccl_channels = tuned.channels;
        options.run_channels = nccl_channels;
        nccl_run_cost = nccl_cost(p.algorithm, tuned.protocol, p.op, gpus, node_count, view.intra,
                                  p.total_bytes, nccl_bus_bandwidth(view, p.algorithm), options);
      } else {
        nccl_run_cost = nccl_cost(p.algorithm, p.op, gpus, node_count, view.intra, p.total_bytes,
                                  nccl_bus_bandwidth(view, p.algorithm), options);
      }
      protocol = nccl_run_cost->protocol;
    }
    if (fidelity == Fidelity::Flow)
      run_flows(p, rank_devices);
    else
      run_steps(p);
    // NCCL's latency: once per collective (flow fidelity charges it in every flow of its
    // first phase), so both fidelities add the same latency to their bandwidth time.
    if (nccl_run_cost && fidelity == Fidelity::Step)
      last_arrival += nccl_collective_latency(*nccl_run_cost, nccl_intra_route_latency,
                                              nccl_inter_route_latency).seconds();
    nccl_run_cost.reset();
    if (!in_flight.empty() || !ready.empty())
      throw std::logic_error("Simulation::run_plan: transfers left unfinished");
    if (!canceled.empty()) {
      // Suspended, they would never finish: cancel them and let the engine retire their
      // actions (their completion callbacks find nothing in flight) before they are freed.
      for (const sg4::CommPtr& c : canceled) c->cancel();
      engine->run();
      canceled.clear();
    }
    plan = nullptr;
    ranks = nullptr;
    expand_link_bytes();
    PlanTiming timing{Seconds(last_arrival - t0), fidelity, started, protocol, nccl_channels,
                      std::move(bytes_a_to_b), std::move(bytes_b_to_a)};
    return timing;
  }

  void run_steps(const Plan& p) {
    flow_mode = false;
    latency_multiplier.clear();
    const std::size_t n = p.transfers.size();
    pending.assign(n, 0);
    succ_offset.assign(n + 1, 0);
    for (TransferId id = 0; id < n; ++id)
      p.for_each_dep(id, [&](TransferId d) {
        ++pending[id];
        ++succ_offset[d + 1];
      });
    for (std::size_t i = 0; i < n; ++i) succ_offset[i + 1] += succ_offset[i];
    succ.assign(succ_offset[n], 0);
    std::vector<std::uint32_t> fill(succ_offset.begin(), succ_offset.end() - 1);
    for (TransferId id = 0; id < n; ++id)
      p.for_each_dep(id, [&](TransferId d) { succ[fill[d]++] = id; });
    for (TransferId id = 0; id < n; ++id)
      if (pending[id] == 0) start_transfer(id);
    drain();
    engine->run();
    drain();
  }

  // A pair's route as the flow-fidelity reductions see it (flow_symmetry.hpp): its SimGrid
  // links, the latency this phase charges it, its NCCL route class, its endpoints' order in
  // their servers. Cached per phase (latencies change between phases).
  const detail::FlowShape& flow_shape(DeviceId src, DeviceId dst) {
    const std::uint64_t key = pair_key(src, dst);
    auto [it, fresh] = flow_shapes.try_emplace(key);
    detail::FlowShape& shape = it->second;
    if (!fresh) return shape;
    const PlatformRoute* route = platform.find_route(src, dst);
    if (route == nullptr) {
      shape.plain = false;
      return shape;
    }
    // One sub-flow on one path of topology links: no queue pairs or rails, no adaptive
    // spreading (whose branching hops are aggregate SimGrid links).
    shape.plain = route->qp_sources.empty() &&
                  std::all_of(route->link_shares.begin(), route->link_shares.end(),
                              [](const LinkShare& s) { return s.share == 1.0; });
    const auto add_port = [&](LinkId link, DeviceId from) {
      const sg4::Link* l = platform.link_from(*topology, link, from);
      shape.ports.push_back({reinterpret_cast<std::uintptr_t>(l), l->get_bandwidth(),
                             static_cast<int>(l->get_sharing_policy())});
    };
    const auto add_route = [&](const Route& r) {
      for (std::size_t i = 0; i < r.links.size(); ++i) add_port(r.links[i], r.devices[i]);
    };
    add_route(route->route);
    if (!shape.plain) {  // every link any part of it may use (conservative coupling)
      for (const Route& r : route->qp_routes) add_route(r);
      for (const LinkShare& s : route->link_shares) add_port(s.link, s.from);
    }
    shape.latency_s = base_latency(Bytes(0.0), src, dst, route->latency).seconds();
    const auto cls = route_class.find(key);
    shape.route_class = cls != route_class.end() ? static_cast<int>(cls->second) + 1 : 0;
    shape.src_order = local_order[src];
    shape.dst_order = local_order[dst];
    return shape;
  }

  // One flow per rank pair and phase, carrying the phase's bytes between them; phases run
  // one after another (barriers), each flow paying the phase's step latencies and fill.
  void run_flows(const Plan& p, const std::vector<DeviceId>& rank_devices) {
    flow_mode = true;
    std::vector<FlowPhase> summed;
    if (!p.flows_only) summed = flow_phases_of(p);
    const std::vector<FlowPhase>& phases = p.flows_only ? p.flow_phases : summed;
    // Each phase's flows: bytes per (source, destination, channel), then per device pair.
    struct PhaseFlows {
      std::map<std::tuple<DeviceId, DeviceId, std::uint8_t>, double> flows;
      std::map<std::pair<DeviceId, DeviceId>, double> pairs;
    };
    std::vector<PhaseFlows> phase_flows(phases.size());
    // One flow per (pair, channel): channels are separate connections (NCCL channels), and
    // merging them would make unequal flows that max-min shares unevenly. Trees with more
    // than one pair (a pair per NIC) are the exception: the rotated chains put a node's
    // neighbour pairs in up to `trees` trees, all on one route with equal bytes, and one
    // flow per tree made SimGrid's solver quadratic in flows (512 GPUs, 16 trees: 12.9 s
    // instead of 2 s). Merged, such a pair weighs as one flow where it shares a link with
    // other pairs: the GPU's NVLink/PCIe port, which the NIC-bound head flows do not
    // saturate. Flow then stays within 10 % of step fidelity (128 GPUs, 16 trees, 256 MiB:
    // 255 vs 235 GB/s busbw; "engine: step and flow agree" checks smaller clusters).
    const bool merge_channels = p.algorithm == Algorithm::Tree && p.channels > 2;
    for (std::size_t k = 0; k < phases.size(); ++k) {
      PhaseFlows& pf = phase_flows[k];
      for (const PlanFlow& f : phases[k].flows) {
        const DeviceId src = rank_devices[f.src];
        const DeviceId dst = rank_devices[f.dst];
        if (src == dst) continue;
        pf.flows[{src, dst, merge_channels ? std::uint8_t{0} : f.channel}] += f.bytes.bytes();
      }
      for (const auto& [key, b] : pf.flows) pf.pairs[{std::get<0>(key), std::get<1>(key)}] += b;
    }
    // Under NCCL every flow of the first phase pays NCCL's latency for the whole collective
    // (base + intra and inter steps, each at least the longest route of its class over the
    // whole plan, as step fidelity charges it); later phases add only their fill. Without a
    // software model, `steps` route latencies per phase.
    Seconds intra_latency{0.0}, inter_latency{0.0};
    if (nccl_run_cost)
      for (const PhaseFlows& pf : phase_flows)
        for (const auto& [pair, b] : pf.pairs) {
          const PlatformRoute* route = platform.find_route(pair.first, pair.second);
          if (route == nullptr) continue;
          Seconds& slot = route_class[pair_key(pair.first, pair.second)] == LinkClass::Net
                              ? inter_latency : intra_latency;
          slot = std::max(slot, route->latency);
        }
    for (std::size_t k = 0; k < phases.size(); ++k) {
      const FlowPhase& phase = phases[k];
      const PhaseFlows& pf = phase_flows[k];
      latency_multiplier.clear();
      const double steps = std::max<std::uint32_t>(phase.steps, 1);
      const Seconds collective_latency =
          nccl_run_cost && k == 0
              ? nccl_collective_latency(*nccl_run_cost, intra_latency, inter_latency)
              : Seconds(0.0);
      for (const auto& [pair, b] : pf.pairs) {
        const PlatformRoute* route = platform.find_route(pair.first, pair.second);
        const double fill_s =
            route != nullptr && route->bottleneck.bytes_per_second() > 0.0
                ? phase.fill.bytes() / route->bottleneck.bytes_per_second() : 0.0;
        latency_multiplier[pair_key(pair.first, pair.second)] =
            nccl_run_cost ? FlowLatency{0.0, collective_latency.seconds() + fill_s}
                          : FlowLatency{steps, fill_s};
      }
      std::vector<detail::DeviceFlow> flows;
      flows.reserve(pf.flows.size());
      for (const auto& [key, b] : pf.flows)
        flows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), b});
      // Exact reductions (flow_symmetry.hpp), where a flow's start does not depend on the
      // others started with it.
      if (symmetry && roce_tier == RoceTier::None && !tcp_incast && !rtt_biased) {
        flow_shapes.clear();
        detail::ReducedPhase reduced = detail::reduce_phase(
            flows, [this](DeviceId src, DeviceId dst) -> const detail::FlowShape& {
              return flow_shape(src, dst);
            });
        for (const detail::DeviceFlow& f : reduced.mirrored) count_link_bytes(f.src, f.dst, f.bytes);
        flows = std::move(reduced.simulate);
      }
      flows_left = flows.size();
      completions = 0;
      for (const detail::DeviceFlow& f : flows)
        start_comm(f.src, f.dst, Bytes(f.bytes), kNoTransfer);
      flush_deferred();
      run_total = flows_left;  // with every QP / rail part
      engine->run();
    }
    latency_multiplier.clear();
  }
};

Simulation::Simulation(const Topology& topology, const std::vector<std::string>& simgrid_args,
                       std::uint64_t ecmp_seed)
    : impl_(std::make_unique<Impl>(topology, simgrid_args, ecmp_seed)) {}

Simulation::~Simulation() = default;

void Simulation::build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs) {
  impl_->build(pairs);
}

void Simulation::set_symmetry(bool on) { impl_->symmetry = on; }

void Simulation::set_progress(std::function<void(const RunProgress&)> report,
                              std::chrono::milliseconds after, std::chrono::milliseconds every) {
  impl_->progress = std::move(report);
  impl_->progress_after = after;
  impl_->progress_every = every;
}

PlanTiming Simulation::run_plan(const Plan& plan, const std::vector<DeviceId>& rank_devices,
                                Fidelity fidelity) {
  return impl_->run(plan, rank_devices, fidelity);
}

}  // namespace gradsync
