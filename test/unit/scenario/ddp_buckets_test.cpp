// gradsync's buckets against the buckets PyTorch's DDP built for the same model
// (test/data/ddp_buckets, written by make_ddp_buckets.py there with torch 1.13 and gloo):
// same count, same bytes, bucket by bucket, at every cap it ran.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradsync/scenario/step_schedule.hpp"

namespace {

using namespace gradsync;
using namespace gradsync::literals;

std::vector<double> gradsync_bucket_bytes(const nlohmann::json& doc, double cap_bytes) {
  const auto& m = doc.at("model");
  TransformerShape shape;
  shape.blocks = m.at("blocks").get<std::uint32_t>();
  shape.hidden = m.at("hidden").get<double>();
  shape.vocab = m.at("vocab").get<double>();
  shape.tie_embeddings = m.at("tie_embeddings").get<bool>();
  ModelSpec model;
  model.grad_dtype = *grad_dtype_from_string(m.at("dtype").get<std::string>());
  model.layers = transformer_layers(shape, std::nullopt, 30_ms, 60_ms);
  SyncSpec sync;
  sync.first_bucket = Bytes(doc.at("first_bucket_bytes").get<double>());
  sync.bucket = Bytes(cap_bytes);
  std::vector<double> out;
  for (const Bucket& b : build_buckets(model, sync)) out.push_back(b.bytes.bytes());
  return out;
}

}  // namespace

TEST_CASE("buckets: as PyTorch's DDP builds them, tensor by tensor, at every cap it ran") {
  const std::filesystem::path dir = std::filesystem::path(GRADSYNC_SOURCE_DIR) / "test/data/ddp_buckets";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path());
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& run : doc.at("runs")) {
      const double cap = run.at("bucket_cap_bytes").get<double>();
      const auto expected = run.at("rebuilt_bucket_sizes").get<std::vector<double>>();
      INFO(entry.path().filename().string() << " at cap " << cap << " bytes");
      const std::vector<double> got = gradsync_bucket_bytes(doc, cap);
      CHECK(got == expected);
    }
  }
  CHECK(files >= 2);
}

TEST_CASE("buckets: the cap decides how many there are; a params-only model still overlaps") {
  TransformerShape shape;
  shape.blocks = 32;
  shape.hidden = 4096;
  shape.vocab = 32000;
  ModelSpec model;
  model.grad_dtype = GradDtype::Bf16;
  model.layers = transformer_layers(shape, 6.74e9, 100_ms, 200_ms);
  auto count = [&](double mib) {
    SyncSpec sync;
    sync.bucket = Bytes(mib * 1048576.0);
    return build_buckets(model, sync).size();
  };
  // Every block weight (16.8M-67M elements, 32-128 MiB) is over 25 MiB: 4 buckets a block.
  CHECK(count(25) == 32 * 4 + 2);
  CHECK(count(100) < count(25));
  CHECK(count(1024) < count(100));

  ModelSpec bare;
  bare.grad_dtype = GradDtype::Bf16;
  bare.layers = equal_layers(6.74e9, 1, 100_ms, 200_ms);
  const std::vector<Bucket> b = build_buckets(bare, SyncSpec{});
  REQUIRE(b.size() > 10);
  CHECK(b.front().ready_offset < b.back().ready_offset);
  double sum = 0;
  for (const Bucket& x : b) sum += x.params;
  CHECK(sum == doctest::Approx(6.74e9));
}
