// Default link efficiencies per fabric (share of the line rate that carries payload when the
// YAML gives no `efficiency:`). Each value and its source is listed in sim/fabric/README.md.
#pragma once

#include "gradsync/topology/topology.hpp"

namespace gradsync {

[[nodiscard]] double default_efficiency(Fabric fabric);

}  // namespace gradsync
