// One step of a sharded / tensor × pipeline layout (parallel_step.hpp): the stages' task
// graph on their compute, comm and p2p streams, scheduled as a list schedule.
#include "gradsync/scenario/parallel_step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "step_tasks.hpp"

namespace gradsync {

std::string_view to_string(CommKind kind) {
  switch (kind) {
    case CommKind::Dp: return "dp";
    case CommKind::Tp: return "tp";
    case CommKind::Pp: return "pp";
  }
  return "?";
}

std::uint32_t CommRequest::group_ranks(const ParallelLayout& layout) const {
  switch (group) {
    case CommGroup::Data: return layout.data;
    case CommGroup::Shard: return layout.shard_group;
    case CommGroup::Replica: return layout.replicas;
    case CommGroup::Tensor: return layout.tensor;
    case CommGroup::NextStage:
    case CommGroup::PrevStage: return 2;
  }
  return 1;
}

namespace {

using detail::add_contention;
using detail::Item;
using detail::kNone;
using detail::stage_schedule;
using detail::Task;
using detail::TaskGraph;
using detail::kStreams;
using detail::kCompute;
using detail::kGather;
using detail::kReduce;
using detail::kP2p;

double busbw_bytes(const CommRequest& r, const ParallelLayout& layout) {
  const std::uint32_t n = r.group_ranks(layout);
  if (r.group == CommGroup::NextStage || r.group == CommGroup::PrevStage) return r.bytes.bytes();
  return busbw_factor(r.op, n) * r.bytes.bytes();
}

}  // namespace

ParallelStep compose_parallel_step(const ModelSpec& model, const ComputeSpec& compute,
                                   const SyncSpec& sync, const ParallelSpec& par,
                                   const ParallelLayout& layout, std::uint32_t accumulation,
                                   const CommTimer& timer, const PairTimer& together) {
  const std::uint32_t p = par.pipeline;
  const std::uint32_t m = accumulation;
  const std::uint32_t v = par.schedule == PipelineSchedule::Interleaved ? par.virtual_stages : 1;
  if (m == 0) throw std::invalid_argument("compose_parallel_step: accumulation must be >= 1");
  if (v > 1 && p > 1 && m % p != 0)
    throw std::invalid_argument(fmt::format(
        "the interleaved schedule needs micro-batches (training.accumulation, {}) a multiple "
        "of the pipeline stages ({})", m, p));
  const std::vector<StageLayers> stages = stage_layers(model, par);
  const std::uint32_t chunks = p * v;
  std::vector<std::pair<std::size_t, std::size_t>> chunk_layers(chunks);
  for (std::uint32_t s = 0; s < p; ++s)
    for (std::uint32_t c = 0; c < stages[s].chunks.size(); ++c)
      chunk_layers[c * p + s] = stages[s].chunks[c];

  const double t = layout.tensor;
  const double bpe = model.bytes_per_grad();
  const bool zero3 = shards_parameters(par.data);
  const bool hsdp = par.data == DataParallelism::Hsdp;
  const CommGroup shard_group = hsdp ? CommGroup::Shard : CommGroup::Data;
  const double activation = model.seq_len * model.hidden * compute.samples_per_micro_batch * bpe;
  const double total_params = model.total_params();

  ParallelStep out;
  using Key = std::tuple<int, std::uint32_t, int, double>;
  auto request_key = [](const CommRequest& r) {
    return std::make_tuple(static_cast<int>(r.group), r.stage, static_cast<int>(r.op),
                           r.bytes.bytes());
  };
  std::map<Key, Seconds> cache;
  std::map<Key, std::pair<CommRequest, std::uint32_t>> uses;  // every run of each request
  auto time_of = [&](const CommRequest& r) {
    const Key key = request_key(r);
    uses.try_emplace(key, r, 0u);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, timer(r)).first;
    return it->second;
  };
  std::vector<CommRequest> requests;  // every distinct request, by its index in tasks
  std::map<Key, std::size_t> request_ids;
  auto request_id = [&](const CommRequest& r) {
    const auto [it, fresh] = request_ids.try_emplace(request_key(r), requests.size());
    if (fresh) requests.push_back(r);
    return it->second;
  };

  TaskGraph g(kStreams * p);
  // Per stage and per (chunk, mb, forward): the item's first and last compute task.
  std::map<std::tuple<std::uint32_t, std::uint32_t, bool>, std::pair<std::size_t, std::size_t>>
      item_tasks;
  struct LayerTask { std::size_t id; std::size_t layer; bool forward; std::uint32_t mb; };
  std::vector<std::vector<LayerTask>> stage_tasks(p);
  std::vector<std::vector<Item>> schedules(p);
  const bool tensor_parallel = layout.tensor > 1 && activation > 0.0;
  std::vector<Seconds> tp_ar(p, Seconds(0.0));  // one activation all-reduce, per stage

  // Pass 1: compute tasks in each stage's schedule order.
  for (std::uint32_t s = 0; s < p; ++s) {
    const CommRequest tp_request{CommKind::Tp, CommGroup::Tensor, s, CollectiveOp::AllReduce,
                                 Bytes(activation)};
    if (tensor_parallel) tp_ar[s] = time_of(tp_request);
    schedules[s] = stage_schedule(par, s, m);
    for (const Item& it : schedules[s]) {
      const auto [first, last] = chunk_layers[it.chunk];
      std::size_t a = kNone, b = kNone;
      for (std::size_t k = 0; k < last - first; ++k) {
        const std::size_t i = it.forward ? first + k : last - 1 - k;
        const LayerSpec& layer = model.layers[i];
        const bool block = layer.name.rfind("block", 0) == 0;
        Task task;
        task.stream = kStreams * s + kCompute;
        task.phase = it.forward ? ComputePhase::Forward : ComputePhase::Backward;
        task.micro_batch = it.mb;
        task.work = it.forward ? layer.forward / t
                               : (layer.backward + (par.activation_checkpointing ? layer.forward
                                                                                  : Seconds(0.0))) / t;
        task.kind = CommKind::Tp;
        if (block && tensor_parallel) {
          const std::uint32_t n = it.forward || !par.activation_checkpointing ? 2 : 4;
          task.tp = tp_ar[s] * static_cast<double>(n);
          task.alone = task.tp;
          task.tp_collectives = n;
          task.request = request_id(tp_request);
          uses[request_key(tp_request)].second += n;
        }
        const std::size_t id = g.add(std::move(task));
        if (a == kNone) a = id;
        b = id;
        stage_tasks[s].push_back({id, i, it.forward, it.mb});
      }
      item_tasks[{it.chunk, it.mb, it.forward}] = {a, b};
    }
  }

  // Bytes and counts of one GPU of each stage, by kind (dp, tp, pp).
  std::vector<std::array<CommKindStats, 3>> stage_stats(p);
  auto add_comm = [&](std::uint32_t s, const CommRequest& r) {
    Task task;
    task.stream = kStreams * s + (r.kind == CommKind::Pp             ? kP2p
                                  : r.op == CollectiveOp::AllGather ? kGather
                                                                    : kReduce);
    task.on_compute = false;
    task.kind = r.kind;
    task.work = time_of(r);
    task.alone = task.work;
    task.request = request_id(r);
    ++uses[request_key(r)].second;
    CommKindStats& st = stage_stats[s][static_cast<int>(r.kind)];
    st.bytes_per_gpu += Bytes(busbw_bytes(r, layout));
    ++st.collectives;
    return g.add(std::move(task));
  };

  // Pass 2: point-to-point sends between chunks and the dependencies they carry.
  for (std::uint32_t s = 0; s < p; ++s)
    for (const Item& it : schedules[s]) {
      const auto [a, b] = item_tasks.at({it.chunk, it.mb, it.forward});
      if (it.forward) {
        if (it.chunk + 1 < chunks) {
          const std::size_t send = add_comm(
              s, {CommKind::Pp, CommGroup::NextStage, s, CollectiveOp::Broadcast,
                  Bytes(activation / t)});
          g.depend(send, b);
          g.depend(item_tasks.at({it.chunk + 1, it.mb, true}).first, send);
        } else {
          g.depend(item_tasks.at({it.chunk, it.mb, false}).first, b);
        }
      } else if (it.chunk > 0) {
        const std::size_t send = add_comm(
            s, {CommKind::Pp, CommGroup::PrevStage, s, CollectiveOp::Broadcast,
                Bytes(activation / t)});
        g.depend(send, b);
        g.depend(item_tasks.at({it.chunk - 1, it.mb, false}).first, send);
      }
    }

  // Pass 3: data-parallel collectives on each stage's comm stream, in issue order.
  std::vector<std::size_t> optimizer(p, kNone), last_of_stage(p, kNone);
  for (std::uint32_t s = 0; s < p; ++s) {
    const std::vector<LayerTask>& tasks = stage_tasks[s];
    // The micro-batch whose backward syncs, per chunk: the last one the stage runs.
    std::map<std::uint32_t, std::uint32_t> last_mb;
    for (const Item& it : schedules[s])
      if (!it.forward) last_mb[it.chunk] = it.mb;
    auto chunk_of_layer = [&](std::size_t layer) {
      for (std::uint32_t c = 0; c < chunks; ++c)
        if (layer >= chunk_layers[c].first && layer < chunk_layers[c].second) return c;
      return 0u;
    };
    auto syncs = [&](const LayerTask& lt, bool every) {
      return !lt.forward && (every || lt.mb == last_mb[chunk_of_layer(lt.layer)]);
    };
    std::size_t last_comm = kNone, last_gather = kNone;  // the last reduction, all-gather
    std::vector<std::pair<Bytes, std::size_t>> after_optimizer;  // ZeRO-1/2 all-gathers
    if (zero3) {
      const bool every = par.sync_every_micro_batch;
      auto needs_gather = [&](const LayerTask& lt) {
        return model.layers[lt.layer].params > 0.0 && (lt.forward || par.reshard_after_forward);
      };
      auto unit_bytes = [&](const LayerTask& lt) { return Bytes(model.layers[lt.layer].params / t * bpe); };
      std::vector<std::size_t> gather(tasks.size(), kNone);
      std::size_t next = 0;  // next task whose gather is not issued yet
      auto issue_next = [&](std::size_t after_end_of) {
        while (next < tasks.size() && !needs_gather(tasks[next])) ++next;
        if (next >= tasks.size()) return;
        const std::size_t id = add_comm(
            s, {CommKind::Dp, shard_group, s, CollectiveOp::AllGather, unit_bytes(tasks[next])});
        if (after_end_of != kNone) g.depend(id, tasks[after_end_of].id);
        g.depend(tasks[next].id, id);
        gather[next] = id;
        last_gather = id;
        ++next;
      };
      issue_next(kNone);
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (par.prefetch && next <= i + 1) issue_next(i > 0 ? i - 1 : kNone);
        const LayerTask& lt = tasks[i];
        if (model.layers[lt.layer].params > 0.0 && syncs(lt, every)) {
          const Bytes unit = unit_bytes(lt);
          std::size_t id = add_comm(s, {CommKind::Dp, shard_group, s, CollectiveOp::ReduceScatter, unit});
          g.depend(id, lt.id);
          if (hsdp && layout.replicas > 1)
            id = add_comm(s, {CommKind::Dp, CommGroup::Replica, s, CollectiveOp::AllReduce,
                              unit / static_cast<double>(layout.shard_group)});
          last_comm = id;
        }
        if (!par.prefetch && next <= i + 1) issue_next(i);
      }
    } else {
      const bool every = par.data == DataParallelism::Zero2;
      const CollectiveOp op =
          par.data == DataParallelism::Ddp ? CollectiveOp::AllReduce : CollectiveOp::ReduceScatter;
      // Buckets per chunk over its layers (1/tensor of each layer's parameters).
      std::map<std::size_t, std::vector<Bytes>> buckets_ending_at;  // by the layer closing them
      for (std::uint32_t c = s; c < chunks; c += p) {
        ModelSpec part;
        part.grad_dtype = model.grad_dtype;
        for (std::size_t i = chunk_layers[c].first; i < chunk_layers[c].second; ++i) {
          LayerSpec l = model.layers[i];
          l.params /= t;
          for (double& n : l.tensors) n /= t;
          part.layers.push_back(l);
        }
        for (const Bucket& bk : build_buckets(part, sync))
          buckets_ending_at[chunk_layers[c].first + bk.layers.back()].push_back(bk.bytes);
      }
      std::size_t last_backward = kNone;
      for (const LayerTask& lt : tasks)
        if (!lt.forward) last_backward = lt.id;
      for (const LayerTask& lt : tasks) {
        if (!syncs(lt, every)) continue;
        const auto found = buckets_ending_at.find(lt.layer);
        if (found == buckets_ending_at.end()) continue;
        for (Bytes bytes : found->second) {
          const std::size_t id = add_comm(s, {CommKind::Dp, CommGroup::Data, s, op, bytes});
          g.depend(id, sync.overlap == Overlap::None ? last_backward : lt.id);
          last_comm = id;
          if (op == CollectiveOp::ReduceScatter && lt.mb == last_mb[chunk_of_layer(lt.layer)])
            after_optimizer.emplace_back(bytes, id);
        }
      }
    }
    // The optimizer: once the stage's gradients are reduced; it updates the GPU's share.
    const double updated = stages[s].params(model) / t /
                           (par.data == DataParallelism::Ddp ? 1.0 : layout.shard_group);
    Task opt;
    opt.stream = kStreams * s + kCompute;
    opt.phase = ComputePhase::Optimizer;
    opt.micro_batch = m - 1;
    opt.work = total_params > 0.0 ? compute.optimizer * (updated / total_params) : Seconds(0.0);
    optimizer[s] = g.add(std::move(opt));
    g.depend(optimizer[s], last_comm);
    g.depend(optimizer[s], last_gather);
    last_of_stage[s] = optimizer[s];
    for (const auto& [bytes, rs] : after_optimizer) {
      const std::size_t id =
          add_comm(s, {CommKind::Dp, CommGroup::Data, s, CollectiveOp::AllGather, bytes});
      g.depend(id, optimizer[s]);
      last_of_stage[s] = id;
    }
  }

  g.schedule();
  if (together) {
    // Rates while two requests overlap, from one simulation of both (parallel_step.hpp).
    std::map<std::pair<std::size_t, std::size_t>, double> rates;
    add_contention(g, [&](std::size_t x, std::size_t y) {
      const auto found = rates.find({x, y});
      if (found != rates.end()) return found->second;
      const auto [tx, ty] = together(requests[x], requests[y]);
      const double ax = time_of(requests[x]).seconds(), ay = time_of(requests[y]).seconds();
      const double o = std::min(tx.seconds(), ty.seconds());
      auto r = [o](double alone, double shared) {
        return o > 0.0 ? std::clamp(1.0 - (shared - alone) / o, 0.01, 1.0) : 1.0;
      };
      rates[{x, y}] = r(ax, tx.seconds());
      rates[{y, x}] = r(ay, ty.seconds());
      return rates[{x, y}];
    });
  }

  // The critical stage: the one that ends last.
  double step = 0.0;
  for (std::uint32_t s = 0; s < p; ++s) {
    const double end = std::max(g.at(optimizer[s]).end, g.at(last_of_stage[s]).end);
    if (end > step) {
      step = end;
      out.critical_stage = s;
    }
  }
  const std::uint32_t cs = out.critical_stage;
  out.dp = stage_stats[cs][0];
  out.pp = stage_stats[cs][2];
  StepTimeline& tl = out.timeline;
  tl.step_time = Seconds(step);
  // Exposed communication: the part of each compute wait that a communication task covers.
  double free_at = 0.0;
  for (std::size_t id : g.stream(kStreams * cs + kCompute)) {
    const Task& task = g.at(id);
    if (task.start > free_at) {
      std::size_t latest = kNone;
      for (std::size_t d : task.deps)
        if (latest == kNone || g.at(d).end > g.at(latest).end) latest = d;
      if (latest != kNone && !g.at(latest).on_compute) {
        const Task& c = g.at(latest);
        const double covered = std::max(0.0, c.end - std::max(free_at, c.start));
        (c.kind == CommKind::Pp ? out.pp : out.dp).exposed += Seconds(std::min(covered, task.start - free_at));
      }
    }
    out.tp.time += task.tp;
    out.tp.contention += task.tp - task.alone;
    out.tp.collectives += task.tp_collectives;
    out.compute_per_gpu += task.work;
    if (!tl.compute.empty() && tl.compute.back().phase == task.phase &&
        tl.compute.back().micro_batch == task.micro_batch &&
        std::abs(tl.compute.back().end.seconds() - task.start) < 1e-12) {
      tl.compute.back().end = Seconds(task.start + task.work.seconds());
    } else {
      tl.compute.push_back({task.phase, task.micro_batch, Seconds(task.start),
                            Seconds(task.start + task.work.seconds())});
    }
    if (task.phase == ComputePhase::Backward) tl.backward_end = Seconds(task.end);
    free_at = task.end;
  }
  out.tp.exposed = out.tp.time;
  // ZeRO-1/2's all-gathers after the optimizer hold the next step back.
  out.dp.exposed += Seconds(std::max(0.0, step - g.at(optimizer[cs]).end));
  for (std::uint32_t k : {kGather, kReduce, kP2p})
    for (std::size_t id : g.stream(kStreams * cs + k)) {
      CommKindStats& st = k == kP2p ? out.pp : out.dp;
      st.time += g.at(id).work;
      st.contention += g.at(id).work - g.at(id).alone;
    }
  // Inline: 2 per block in forward, 2 (4 with recomputation) in backward, per micro-batch.
  out.tp.bytes_per_gpu = Bytes(out.tp.collectives *
                               busbw_factor(CollectiveOp::AllReduce, layout.tensor) * activation);
  for (const auto& [key, use] : uses) out.uses.push_back(use);
  tl.compute_time = out.compute_per_gpu;
  tl.comm_time = out.dp.time + out.tp.time + out.pp.time;
  // Without a pipeline every wait of the compute stream is on the data-parallel stream
  // (directly, or behind a collective it queues after).
  if (p == 1)
    out.dp.exposed = Seconds(std::max(0.0, step - tl.compute_time.seconds() - out.tp.exposed.seconds()));
  tl.exposed_comm = out.dp.exposed + out.tp.exposed + out.pp.exposed;
  tl.sync_end = tl.step_time;
  out.bubble = Seconds(std::max(0.0, step - tl.compute_time.seconds() - tl.exposed_comm.seconds()));
  return out;
}

}  // namespace gradsync
