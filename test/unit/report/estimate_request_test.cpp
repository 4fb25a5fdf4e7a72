// `gradsync estimate`'s option text -> EstimateRequest (estimate_request.hpp): units parsed,
// defaults kept for options not given, and each bad value reported at its option.
#include <doctest/doctest.h>

#include <string>

#include "gradsync/units/config_error.hpp"
#include "gradsync/report/estimate_request.hpp"

namespace {

using namespace gradsync;

EstimateArguments readme_arguments() {
  EstimateArguments a;
  a.params = "7e9";
  a.dtype = "fp16";
  a.bandwidth = "10Gbps";
  a.latency = "50us";
  a.gpus = "8";
  return a;
}

// The message of the ConfigError `a` raises ("" when it raises none).
std::string error_in(const EstimateArguments& a) {
  try {
    (void)estimate_request(a);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("estimate request: the README example, units parsed and defaults kept") {
  const EstimateRequest r = estimate_request(readme_arguments());
  CHECK(r.params == 7e9);
  CHECK(r.dtype == GradDtype::Fp16);
  CHECK(r.bandwidth.bytes_per_second() == doctest::Approx(1.25e9));
  CHECK(r.latency.seconds() == doctest::Approx(50e-6));
  CHECK(r.gpus == 8);
  CHECK(r.efficiency == kDefaultEstimateEfficiency);
  CHECK(r.accumulation == 1);
  CHECK(r.ps_servers == 1);
  CHECK_FALSE(r.gpus_per_node);
  CHECK_FALSE(r.intra_bandwidth);
  CHECK_FALSE(r.compute);
}

TEST_CASE("estimate request: the optional options") {
  EstimateArguments a = readme_arguments();
  a.params = "350M";
  a.efficiency = "0.75";
  a.accumulation = "4";
  a.ps_servers = "2";
  a.gpus_per_node = "4";
  a.intra_bandwidth = "450GB/s";
  a.compute = "360ms";
  const EstimateRequest r = estimate_request(a);
  CHECK(r.params == 350e6);
  CHECK(r.efficiency == 0.75);
  CHECK(r.accumulation == 4);
  CHECK(r.ps_servers == 2);
  CHECK(r.gpus_per_node == 4u);
  CHECK(r.intra_bandwidth->bytes_per_second() == doctest::Approx(450e9));
  CHECK(r.compute->seconds() == doctest::Approx(0.36));
}

TEST_CASE("estimate request: each bad value names its option") {
  EstimateArguments a = readme_arguments();
  a.bandwidth = "10";
  CHECK(error_in(a).rfind("gradsync estimate --bandwidth: error: ", 0) == 0);
  a = readme_arguments();
  a.params = "0";
  CHECK(error_in(a) == "gradsync estimate --params: error: 0 parameters is outside (0, 1e14]");
  a = readme_arguments();
  a.dtype = "int4";
  CHECK(error_in(a) ==
        "gradsync estimate --dtype: error: unknown dtype \"int4\" (fp32, fp16, bf16 or fp8)");
  a = readme_arguments();
  a.gpus = "2.5";
  CHECK(error_in(a) ==
        "gradsync estimate --gpus: error: \"2.5\" must be a whole number from 1 to 1000000");
  a = readme_arguments();
  a.efficiency = "1.5";
  CHECK(error_in(a) == "gradsync estimate --efficiency: error: 1.5 is outside (0, 1] (a share "
                       "of line rate, e.g. 0.6)");
  a = readme_arguments();
  a.efficiency = "0,6";
  CHECK(error_in(a) == "gradsync estimate --efficiency: error: \"0,6\" is not a number");
  a = readme_arguments();
  a.gpus_per_node = "3";
  CHECK(error_in(a) ==
        "gradsync estimate --gpus-per-node: error: 3 GPUs per node does not divide --gpus 8");
  a = readme_arguments();
  a.intra_bandwidth = "0GB/s";
  CHECK(error_in(a) == "gradsync estimate --intra-bandwidth: error: bandwidth must be positive");
}
