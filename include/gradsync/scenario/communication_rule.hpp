// The rule of thumb users act on: when exposed communication (what the step waits for beyond
// its compute) exceeds ~30 % of the step, adding GPUs buys little — fix the network, overlap,
// accumulate or compress first. `run`'s verdict, `estimate`'s no-overlap share and `advise`'s
// bisections all read this one value.
#pragma once

namespace gradsync {

inline constexpr double kCommunicationBoundShare = 0.30;

}  // namespace gradsync
