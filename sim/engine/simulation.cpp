// Plan replay on SimGrid (see simulation.hpp): the SimGrid session, the platform and its latency
// model, one run of a plan (NCCL's cost, then step or flow replay), and the public API.
// No actors: every transfer is a Comm started with Comm::sendto_init()/start() from
// Activity::on_completion callbacks, and forgotten as soon as it completes, so memory follows
// the flows in flight, not the plan's length.
#include "simulation_impl.hpp"

namespace gradsync {

void Simulation::Impl::build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs) {
  if (built) throw std::logic_error("Simulation::build called twice");
  PlatformOptions options;
  options.ecmp_seed = ecmp_seed;
  options.drop_implied_links = drop_implied_links;
  options.latency_model = [this](Bytes size, DeviceId src, DeviceId dst, Seconds route_latency) {
    const Seconds latency = next_latency_override
                                ? Seconds(*next_latency_override)
                                : base_latency(size, src, dst, route_latency) +
                                      Seconds(next_extra_latency);
    last_charged_latency = latency.seconds();
    return latency;
  };
  run_started = progress_shown = std::chrono::steady_clock::now();
  progress_shown -= progress_every;
  if (progress)
    options.progress = [this](std::size_t done, std::size_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - run_started < progress_after || now - progress_shown < progress_every) return;
      progress_shown = now;
      RunProgress r;
      r.done = done;
      r.total = total;
      r.routing = true;
      progress(r);
    };
  platform = build_platform(*engine, *topology, router, pairs, options);
  // Rate caps of the fabric corrections (RoCE PFC without ECN). SimGrid 3.32 honours neither
  // Comm::set_rate() on host-to-host Comms nor a bound from the bandwidth factor f under CM02:
  // f only scales what a flow delivers (its max-min share x f). So a flow whose capped rate is
  // below its max-min share at start gets f = capped rate / max-min share: it holds its share
  // of the links (the time PFC keeps them paused) and delivers the capped rate while that
  // congestion lasts; when it eases, the correction restarts the flow's remainder at its new
  // rate (correct_after()).
  if (caps_rates)
    engine->get_netzone_root()->get_network_model()->set_bw_factor_cb(
        [this](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
               const std::unordered_set<sg4::NetZone*>&) {
          return next_rate_cap > 0.0 ? next_rate_cap : 1.0;
        });
  for (const PlatformRoute& r : platform.routes)
    route_class[pair_key(r.src, r.dst)] = route_link_class(*topology, r.route);
  built = true;
}

Seconds Simulation::Impl::base_latency(Bytes, DeviceId src, DeviceId dst, Seconds route_latency) {
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

void Simulation::Impl::expand_link_bytes() {
  bytes_a_to_b.assign(topology->links().size(), 0.0);
  bytes_b_to_a.assign(topology->links().size(), 0.0);
  for (const auto& [key, bytes] : pair_bytes) {
    const PlatformRoute* route = platform.find_route(static_cast<DeviceId>(key >> 32),
                                                     static_cast<DeviceId>(key & 0xffffffffULL));
    if (route == nullptr) continue;
    if (!route->link_shares.empty()) {  // QPs or adaptive spreading: bytes × share per link
      for (const LinkShare& s : route->link_shares) {
        const Link& l = topology->link(s.link);
        (l.a == s.from ? bytes_a_to_b : bytes_b_to_a)[l.shares.value_or(s.link)] +=
            bytes * s.share;
      }
      continue;
    }
    // A link that shares another's physical link (Link::shares) counts there, same orientation.
    const auto& devices = route->route.devices;
    const auto& links = route->route.links;
    for (std::size_t i = 0; i < links.size(); ++i) {
      const Link& l = topology->link(links[i]);
      (devices[i] == l.a ? bytes_a_to_b : bytes_b_to_a)[l.shares.value_or(links[i])] += bytes;
    }
  }
  pair_bytes.clear();
}

std::optional<NcclStepCost> Simulation::Impl::nccl_setup(const Plan& p,
                                                        const std::vector<DeviceId>& rank_devices,
                                                        std::optional<NcclProtocol>& protocol,
                                                        std::uint32_t& nccl_channels) const {
  std::optional<NcclStepCost> cost;
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
    // The channels NCCL runs this size on (Ring, Tree, NVLS, NVLSTree, CollNet; the others are
    // gradsync's what-ifs, costed as rings on every channel).
    // NCCL's protocol for it (a tuner rule's, else the fastest predicted).
    if (p.algorithm == Algorithm::Ring || p.algorithm == Algorithm::Tree ||
        p.algorithm == Algorithm::Nvls || p.algorithm == Algorithm::NvlsTree ||
        p.algorithm == Algorithm::CollNetChain || p.algorithm == Algorithm::CollNetDirect) {
      const NcclTuning tuned = nccl_tune(view, p.op, p.total_bytes, {p.algorithm});
      nccl_channels = tuned.channels;
      options.run_channels = nccl_channels;
      cost = nccl_cost(p.algorithm, tuned.protocol, p.op, gpus, node_count, view.intra,
                       p.total_bytes, nccl_bus_bandwidth(view, p.algorithm), options);
    } else {
      cost = nccl_cost(p.algorithm, p.op, gpus, node_count, view.intra, p.total_bytes,
                       nccl_bus_bandwidth(view, p.algorithm), options);
    }
    protocol = cost->protocol;
  }
  return cost;
}

void Simulation::Impl::retire_canceled() {
  if (canceled.empty()) return;
  // Suspended, they would never finish: cancel them and let the engine retire their actions
  // (their completion callbacks find nothing in flight) before they are freed.
  for (const sg4::CommPtr& c : canceled) c->cancel();
  engine->run();
  canceled.clear();
}

PlanTiming Simulation::Impl::run(const Plan& p, const std::vector<DeviceId>& rank_devices,
                                 Fidelity requested) {
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
  nccl_intra_route_latency = nccl_inter_route_latency = Seconds(0.0);
  std::optional<NcclProtocol> protocol;
  std::uint32_t nccl_channels = 0;
  nccl_run_cost = nccl_setup(p, rank_devices, protocol, nccl_channels);
  // A protocol that streams through the plan's stages never waits for a whole chunk: under
  // auto it is replayed as flows, with no pipeline fill (simulation.hpp streams_through_stages).
  streamed_run = streams_through_stages(p.algorithm, protocol);
  const Fidelity fidelity = requested == Fidelity::Auto && streamed_run
                                ? Fidelity::Flow
                                : resolve_fidelity(requested, p);
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
  retire_canceled();
  plan = nullptr;
  ranks = nullptr;
  expand_link_bytes();
  PlanTiming timing{Seconds(last_arrival - t0), fidelity, started, protocol, nccl_channels,
                    std::move(bytes_a_to_b), std::move(bytes_b_to_a)};
  return timing;
}

Simulation::Simulation(const Topology& topology, const std::vector<std::string>& simgrid_args,
                       std::uint64_t ecmp_seed)
    : impl_(std::make_unique<Impl>(topology, simgrid_args, ecmp_seed)) {}

Simulation::~Simulation() = default;

void Simulation::build(const std::vector<std::pair<DeviceId, DeviceId>>& pairs) {
  impl_->build(pairs);
}

void Simulation::set_symmetry(bool on) { impl_->symmetry = on; }

void Simulation::set_drop_implied_links(bool on) {
  if (impl_->built) throw std::logic_error("Simulation::set_drop_implied_links after build");
  impl_->drop_implied_links = on;
}

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
