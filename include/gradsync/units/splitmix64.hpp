// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014; the finalizer of java.util.SplittableRandom): a cheap, well-mixed 64-bit hash.
// gradsync's ECMP choices (the Router's per-hop pick, a connection's queue pairs, the platform's
// per-flow hash) all use this one function, so a seed gives the same paths everywhere.
#pragma once

#include <cstdint>

namespace gradsync {

[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace gradsync
