// Scenario values (include/gradsync/scenario/scenario.hpp): the spellings of its enumerations, bytes per
// gradient element, a model's parameter and gradient totals, and the data-parallel ranks.
#include "gradsync/scenario/scenario.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"
#include "gradsync/units/name_table.hpp"

namespace gradsync {

namespace {


constexpr std::array<std::pair<std::string_view, GradDtype>, 4> kDtypes{{{"fp32", GradDtype::Fp32},
                                                                         {"fp16", GradDtype::Fp16},
                                                                         {"bf16", GradDtype::Bf16},
                                                                         {"fp8", GradDtype::Fp8}}};
constexpr std::array<std::pair<std::string_view, SyncStrategy>, 3> kStrategies{
    {{"allreduce", SyncStrategy::AllReduce},
     {"ps", SyncStrategy::ParameterServer},
     {"async-ps", SyncStrategy::AsyncParameterServer}}};
constexpr std::array<std::pair<std::string_view, SyncAlgorithm>, 8> kAlgorithmNames{
    {{"ring", SyncAlgorithm::Ring},
     {"tree", SyncAlgorithm::Tree},
     {"hierarchical", SyncAlgorithm::Hierarchical},
     {"nvls", SyncAlgorithm::Nvls},
     {"nvlstree", SyncAlgorithm::NvlsTree},
     {"collnetchain", SyncAlgorithm::CollNetChain},
     {"collnetdirect", SyncAlgorithm::CollNetDirect},
     {"auto", SyncAlgorithm::Auto}}};
constexpr std::array<std::pair<std::string_view, Overlap>, 3> kOverlaps{
    {{"none", Overlap::None}, {"bucketed", Overlap::Bucketed}, {"layerwise", Overlap::Layerwise}}};
constexpr std::array<std::pair<std::string_view, CompressionMethod>, 5> kMethods{
    {{"none", CompressionMethod::None},
     {"int8", CompressionMethod::Int8},
     {"fp8", CompressionMethod::Fp8},
     {"int4", CompressionMethod::Int4},
     {"topk", CompressionMethod::TopK}}};

constexpr std::array<std::pair<std::string_view, DataParallelism>, 6> kDataParallelisms{
    {{"ddp", DataParallelism::Ddp},
     {"zero1", DataParallelism::Zero1},
     {"zero2", DataParallelism::Zero2},
     {"zero3", DataParallelism::Zero3},
     {"fsdp", DataParallelism::Fsdp},
     {"hsdp", DataParallelism::Hsdp}}};
constexpr std::array<std::pair<std::string_view, PipelineSchedule>, 3> kSchedules{
    {{"1f1b", PipelineSchedule::OneFOneB},
     {"gpipe", PipelineSchedule::GPipe},
     {"interleaved", PipelineSchedule::Interleaved}}};

}  // namespace

std::string_view to_string(DataParallelism d) { return name_in(kDataParallelisms, d); }
std::optional<DataParallelism> data_parallelism_from_string(std::string_view text) {
  return value_in(kDataParallelisms, text);
}
std::string_view to_string(PipelineSchedule s) { return name_in(kSchedules, s); }
std::optional<PipelineSchedule> pipeline_schedule_from_string(std::string_view text) {
  return value_in(kSchedules, text);
}
constexpr std::array<std::pair<std::string_view, ParallelDim>, 3> kDims{
    {{"tp", ParallelDim::Tensor}, {"dp", ParallelDim::Data}, {"pp", ParallelDim::Pipeline}}};
std::string to_string(const std::array<ParallelDim, 3>& order) {
  return fmt::format("{}-{}-{}", name_in(kDims, order[0]), name_in(kDims, order[1]),
                     name_in(kDims, order[2]));
}
std::optional<std::array<ParallelDim, 3>> parallel_order_from_string(std::string_view text) {
  std::array<ParallelDim, 3> out{};
  std::size_t at = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? text.find('-', at) : text.size();
    if (end == std::string_view::npos) return std::nullopt;
    const auto dim = value_in(kDims, text.substr(at, end - at));
    if (!dim || std::find(out.begin(), out.begin() + i, *dim) != out.begin() + i) return std::nullopt;
    out[i] = *dim;
    at = end + 1;
  }
  return out;
}
bool shards_parameters(DataParallelism d) {
  return d == DataParallelism::Zero3 || d == DataParallelism::Fsdp || d == DataParallelism::Hsdp;
}

std::string_view to_string(GradDtype dtype) { return name_in(kDtypes, dtype); }
std::optional<GradDtype> grad_dtype_from_string(std::string_view text) {
  return value_in(kDtypes, text);
}
std::string_view to_string(SyncStrategy s) { return name_in(kStrategies, s); }
std::optional<SyncStrategy> sync_strategy_from_string(std::string_view text) {
  return value_in(kStrategies, text);
}
std::string_view to_string(SyncAlgorithm a) { return name_in(kAlgorithmNames, a); }
std::vector<std::string> sync_algorithm_names() { return names_in(kAlgorithmNames); }
std::vector<std::string> grad_dtype_names() { return names_in(kDtypes); }
std::vector<std::string> sync_strategy_names() { return names_in(kStrategies); }
std::vector<std::string> overlap_names() { return names_in(kOverlaps); }
std::vector<std::string> compression_method_names() { return names_in(kMethods); }
std::vector<std::string> data_parallelism_names() { return names_in(kDataParallelisms); }
std::vector<std::string> pipeline_schedule_names() { return names_in(kSchedules); }
std::optional<SyncAlgorithm> sync_algorithm_from_string(std::string_view text) {
  return value_in(kAlgorithmNames, text);
}
std::string_view to_string(Overlap o) { return name_in(kOverlaps, o); }
std::optional<Overlap> overlap_from_string(std::string_view text) {
  return value_in(kOverlaps, text);
}
std::string_view to_string(CompressionMethod m) { return name_in(kMethods, m); }
std::optional<CompressionMethod> compression_method_from_string(std::string_view text) {
  return value_in(kMethods, text);
}

double bytes_per_element(GradDtype dtype) {
  switch (dtype) {
    case GradDtype::Fp32:
      return 4.0;
    case GradDtype::Fp16:
      return 2.0;
    case GradDtype::Bf16:
      return 2.0;
    case GradDtype::Fp8:
      return 1.0;
  }
  return 4.0;
}

double ModelSpec::total_params() const {
  double sum = 0.0;
  for (const auto& l : layers) sum += l.params;
  return sum;
}

Bytes ModelSpec::grad_bytes() const { return Bytes(total_params() * bytes_per_grad()); }

std::uint32_t data_parallel_ranks(std::uint32_t gpus, const SyncSpec& sync) {
  if (sync.strategy == SyncStrategy::AllReduce || sync.ps.hosts) return gpus;
  ParameterServerOptions ps;
  ps.servers = sync.ps.servers;
  ps.placement = sync.ps.placement == PsPlacement::Dedicated ? ServerPlacement::Dedicated
                                                             : ServerPlacement::Colocated;
  return ps_worker_count(gpus, ps);
}

}  // namespace gradsync
