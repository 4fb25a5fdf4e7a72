// Ranks, groups and pipeline stages of a parallel layout (parallel_layout.hpp).
#include "gradsync/scenario/parallel_layout.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace gradsync {

std::vector<std::vector<std::uint32_t>> ParallelLayout::data_groups(std::uint32_t stage) const {
  std::vector<std::vector<std::uint32_t>> out(tensor);
  for (std::uint32_t t = 0; t < tensor; ++t)
    for (std::uint32_t d = 0; d < data; ++d) out[t].push_back(rank_of(stage, d, t));
  return out;
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::shard_groups(std::uint32_t stage) const {
  std::vector<std::vector<std::uint32_t>> out;
  for (std::uint32_t t = 0; t < tensor; ++t)
    for (std::uint32_t r = 0; r < replicas; ++r) {
      out.emplace_back();
      for (std::uint32_t k = 0; k < shard_group; ++k)
        out.back().push_back(rank_of(stage, r * shard_group + k, t));
    }
  return out;
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::replica_groups(std::uint32_t stage) const {
  std::vector<std::vector<std::uint32_t>> out;
  for (std::uint32_t t = 0; t < tensor; ++t)
    for (std::uint32_t k = 0; k < shard_group; ++k) {
      out.emplace_back();
      for (std::uint32_t r = 0; r < replicas; ++r)
        out.back().push_back(rank_of(stage, r * shard_group + k, t));
    }
  return out;
}

std::vector<std::vector<std::uint32_t>> ParallelLayout::tensor_groups(std::uint32_t stage) const {
  std::vector<std::vector<std::uint32_t>> out(data);
  for (std::uint32_t d = 0; d < data; ++d)
    for (std::uint32_t t = 0; t < tensor; ++t) out[d].push_back(rank_of(stage, d, t));
  return out;
}

ParallelLayout make_layout(std::uint32_t gpus, const ParallelSpec& spec,
                           std::uint32_t gpus_per_server) {
  ParallelLayout l;
  l.gpus = gpus;
  l.tensor = spec.tensor;
  l.pipeline = spec.pipeline;
  const std::uint64_t model_ranks = std::uint64_t{spec.tensor} * spec.pipeline;
  if (model_ranks == 0 || gpus % model_ranks != 0)
    throw std::invalid_argument(fmt::format(
        "tensor {} x pipeline {} = {} does not divide the {} GPUs", spec.tensor, spec.pipeline,
        model_ranks, gpus));
  l.data = static_cast<std::uint32_t>(gpus / model_ranks);
  std::uint32_t stride = 1;
  for (ParallelDim dim : spec.order) {
    std::uint32_t& slot = dim == ParallelDim::Tensor ? l.tensor_stride
                          : dim == ParallelDim::Data ? l.data_stride
                                                     : l.stage_stride;
    slot = stride;
    stride *= dim == ParallelDim::Tensor ? l.tensor : dim == ParallelDim::Data ? l.data : l.pipeline;
  }
  switch (spec.data) {
    case DataParallelism::Ddp:
      l.shard_group = 1;
      l.replicas = l.data;
      break;
    case DataParallelism::Hsdp: {
      std::uint32_t g = spec.shard_group;
      if (g == 0) g = std::max<std::uint32_t>(1, gpus_per_server / spec.tensor);
      g = spec.shard_group == 0 ? std::min(g, l.data) : g;
      if (g == 0 || l.data % g != 0)
        throw std::invalid_argument(fmt::format(
            "shard_group {} does not divide the data-parallel degree {} (GPUs / (tensor x "
            "pipeline))", g, l.data));
      l.shard_group = g;
      l.replicas = l.data / g;
      break;
    }
    default:
      l.shard_group = l.data;
      l.replicas = 1;
  }
  return l;
}

std::vector<std::pair<std::size_t, std::size_t>> split_layers(const ModelSpec& model,
                                                              std::uint32_t parts) {
  const std::size_t n = model.layers.size();
  if (parts == 0 || n < parts)
    throw std::invalid_argument(fmt::format(
        "{} layers cannot be cut into {} pipeline chunks (one layer each at least)", n, parts));
  double total = 0.0;
  for (const LayerSpec& l : model.layers) total += (l.forward + l.backward).seconds();
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t first = 0;
  double running = 0.0;
  for (std::uint32_t k = 0; k + 1 < parts; ++k) {
    const double target = total * (k + 1) / parts;
    std::size_t last = first;
    // Take layers until the running time reaches the target, leaving one per later chunk.
    while (last < n - (parts - 1 - k)) {
      running += (model.layers[last].forward + model.layers[last].backward).seconds();
      ++last;
      if (running >= target * (1.0 - 1e-12) && last > first) break;
    }
    if (last == first) ++last;
    out.emplace_back(first, last);
    first = last;
  }
  out.emplace_back(first, n);
  return out;
}

double StageLayers::params(const ModelSpec& model) const {
  double sum = 0.0;
  for (const auto& [first, last] : chunks)
    for (std::size_t i = first; i < last; ++i) sum += model.layers[i].params;
  return sum;
}

std::vector<StageLayers> stage_layers(const ModelSpec& model, const ParallelSpec& spec) {
  const std::uint32_t v = spec.schedule == PipelineSchedule::Interleaved ? spec.virtual_stages : 1;
  const auto chunks = split_layers(model, spec.pipeline * v);
  std::vector<StageLayers> out(spec.pipeline);
  for (std::size_t c = 0; c < chunks.size(); ++c) out[c % spec.pipeline].chunks.push_back(chunks[c]);
  return out;
}

}  // namespace gradsync
