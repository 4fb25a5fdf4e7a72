// Where each rank of a tensor × pipeline × data layout sits, which ranks form each
// communication group, and which layers each pipeline stage holds. Pure functions.
//
// Rank order as Megatron-LM's (initialize_model_parallel, order "tp-dp-pp"): tensor
// innermost, then data, then pipeline:
//   rank = t + tensor · (d + data · s)      t < tensor, d < data, s < pipeline
// (ParallelSpec::order permutes them: "dp-tp-pp" puts a data-parallel group on consecutive
// ranks, one server, and the tensor groups across servers).
// With ranks placed in order on servers (torchrun fills hosts), a tensor group of ≤ GPUs per
// server stays inside one server on NVLink, and the data-parallel group of tensor rank t
// crosses servers through the same local GPU, hence the same rail.
// HSDP cuts each data-parallel group into replicas of `shard_group` consecutive members: the
// shard group of member d is d / shard_group, and the replica group of member d holds the
// members with the same d mod shard_group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "gradsync/scenario/scenario.hpp"

namespace gradsync {

struct ParallelLayout {
  std::uint32_t gpus = 1;
  std::uint32_t tensor = 1;
  std::uint32_t pipeline = 1;
  std::uint32_t data = 1;         // gpus / (tensor · pipeline)
  std::uint32_t shard_group = 1;  // ranks over which states are sharded (hsdp: the group;
                                  // zero*/fsdp: data; ddp: 1)
  std::uint32_t replicas = 1;     // data / shard_group (hsdp; ddp: data; zero/fsdp: 1)

  // Rank strides of tensor rank, data member and stage (from the order).
  std::uint32_t tensor_stride = 1;
  std::uint32_t data_stride = 1;
  std::uint32_t stage_stride = 1;

  [[nodiscard]] std::uint32_t rank_of(std::uint32_t stage, std::uint32_t member,
                                      std::uint32_t tensor_rank) const {
    return tensor_rank * tensor_stride + member * data_stride + stage * stage_stride;
  }
  // Every tensor rank's data-parallel group of `stage` (tensor groups, each `data` ranks).
  [[nodiscard]] std::vector<std::vector<std::uint32_t>> data_groups(std::uint32_t stage) const;
  // HSDP: the shard groups (shard_group ranks each) and the replica groups (replicas ranks
  // each) of `stage`, over every tensor rank.
  [[nodiscard]] std::vector<std::vector<std::uint32_t>> shard_groups(std::uint32_t stage) const;
  [[nodiscard]] std::vector<std::vector<std::uint32_t>> replica_groups(std::uint32_t stage) const;
  // The tensor groups of `stage` (`tensor` consecutive ranks each).
  [[nodiscard]] std::vector<std::vector<std::uint32_t>> tensor_groups(std::uint32_t stage) const;
};

// The layout of `gpus` GPUs under `spec`, `gpus_per_server` per server (for HSDP's default
// shard group: a server's GPUs / tensor). Throws std::invalid_argument saying what does not
// divide (tensor · pipeline must divide the GPUs; the shard group must divide the data degree).
[[nodiscard]] ParallelLayout make_layout(std::uint32_t gpus, const ParallelSpec& spec,
                                         std::uint32_t gpus_per_server);

// Contiguous layer ranges [first, last) of `parts` pipeline chunks, balanced by compute: chunk
// k ends at the first layer where the running forward + backward time reaches (k+1)/parts of
// the total, each chunk keeping at least one layer (Megatron splits the blocks evenly; the
// embedding joins the first chunk, the head the last). Throws std::invalid_argument when there
// are fewer layers than parts.
[[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> split_layers(
    const ModelSpec& model, std::uint32_t parts);

// A model's layers as one pipeline stage runs them: chunk c of the pipeline·virtual_stages
// chunks belongs to stage c mod pipeline (interleaved schedule; one chunk per stage otherwise).
struct StageLayers {
  std::vector<std::pair<std::size_t, std::size_t>> chunks;  // layer ranges, in chunk order
  [[nodiscard]] double params(const ModelSpec& model) const;
};
[[nodiscard]] std::vector<StageLayers> stage_layers(const ModelSpec& model,
                                                    const ParallelSpec& spec);

}  // namespace gradsync
