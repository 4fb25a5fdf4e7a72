// The progress line bench and run print on a terminal (see commands.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "commands.hpp"

namespace gradsync::cli {

std::string progress_text(const RunProgress& r) {
  if (r.routing) return fmt::format("routing {} of {} connections", r.done, r.total);
  return fmt::format("{:.0f} % of {} {}, {:.3g} ms simulated",
                     100.0 * static_cast<double>(r.done) /
                         static_cast<double>(std::max<std::size_t>(r.total, 1)),
                     r.total, r.flows ? "flows" : "transfers", r.simulated.seconds() * 1e3);
}

}  // namespace gradsync::cli
