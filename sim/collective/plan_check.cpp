// check_plan: symbolic execution of a plan. Every copy of every chunk, (rank, chunk), is a
// location holding a set of contributors (a bitset over ranks). Transfers run in the plan's
// order: a Reduce ORs the sender's set into the receiver's (two sets that intersect mean a
// contribution counted twice), a Copy overwrites it. The end state must be the one the
// operation promises.
//
// The plan's order is only one of the orders the engine may run it in: the engine honours the
// dependencies and nothing else. So each access to a location must be ordered, through the
// dependencies, with the earlier accesses whose order matters. Per location, accesses form
// alternating runs of writes and reads:
//   - a read needs every write of the current write run as an ancestor (read after write);
//   - a write needs every read of the previous read run as an ancestor (write after read);
//   - writes within a run may be concurrent only if all are Reduce (sums commute); a Copy and
//     any other write of its run must be ordered (write after write).
// By transitivity through the runs, every conflicting pair is then ordered.
//
// Ancestry is answered by a depth-first search over dependencies, pruned below the smallest
// transfer id wanted (dependencies point backward) and stopped once all are found; it follows
// dep0 (the data dependency, by planner convention) first, so a ring's check walks one data
// chain per hazard.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradsync/collective/collective.hpp"

namespace gradsync {
namespace {

struct Hazards {
  std::vector<TransferId> writes;      // current write run
  std::vector<TransferId> reads;       // read run after it
  std::vector<TransferId> prev_reads;  // read run before it
  bool run_has_copy = false;
};

enum class Need : std::uint8_t { ReadAfterWrite, WriteAfterRead, WriteAfterWrite };

struct Required {
  TransferId id;
  Need need;
};

class Ancestry {
 public:
  explicit Ancestry(const Plan& plan)
      : plan_(plan), mark_(plan.transfers.size(), 0), wanted_(plan.transfers.size(), 0) {}

  // Marks which of `required` are ancestors of `t`; returns the index of the first that is
  // not, or required.size().
  std::size_t first_missing(TransferId t, std::span<const Required> required) {
    if (required.empty()) return 0;
    ++stamp_;
    stack_.clear();
    plan_.for_each_dep(t, [&](TransferId d) { mark_[d] = stamp_; });
    std::size_t remaining = 0;
    TransferId lowest = kNoTransfer;
    for (const Required& r : required) {
      if (mark_[r.id] == stamp_ || wanted_[r.id] == stamp_) continue;
      wanted_[r.id] = stamp_;
      ++remaining;
      lowest = std::min(lowest, r.id);
    }
    if (remaining > 0) {
      push_deps(t, lowest);
      while (!stack_.empty() && remaining > 0) {
        const TransferId v = stack_.back();
        stack_.pop_back();
        buffer_.clear();
        plan_.for_each_dep(v, [&](TransferId d) { buffer_.push_back(d); });
        for (auto it = buffer_.rbegin(); it != buffer_.rend(); ++it) {
          const TransferId d = *it;
          if (mark_[d] == stamp_ || d < lowest) continue;
          mark_[d] = stamp_;
          if (wanted_[d] == stamp_ && --remaining == 0) break;
          stack_.push_back(d);
        }
      }
    }
    for (std::size_t i = 0; i < required.size(); ++i)
      if (mark_[required[i].id] != stamp_) return i;
    return required.size();
  }

 private:
  // Pushes t's dependencies (already marked) so that dep0 is searched first.
  void push_deps(TransferId t, TransferId lowest) {
    buffer_.clear();
    plan_.for_each_dep(t, [&](TransferId d) { buffer_.push_back(d); });
    for (auto it = buffer_.rbegin(); it != buffer_.rend(); ++it)
      if (*it >= lowest) stack_.push_back(*it);
  }

  const Plan& plan_;
  std::vector<std::uint32_t> mark_;    // == stamp_: known ancestor of the current transfer
  std::vector<std::uint32_t> wanted_;  // == stamp_: required for the current transfer
  std::uint32_t stamp_ = 0;
  std::vector<TransferId> stack_;
  std::vector<TransferId> buffer_;
};

class Checker {
 public:
  explicit Checker(const Plan& plan) : plan_(plan) {}

  PlanCheck run() {
    if (!check_shape()) return result_;
    if (!check_transfers()) return result_;
    init_state();
    Ancestry ancestry(plan_);
    std::vector<Required> required;
    for (TransferId id = 0; id < plan_.transfers.size(); ++id) {
      const Transfer& t = plan_.transfers[id];
      Hazards& src = hazards_[location(t.src, t.chunk)];
      Hazards& dst = hazards_[location(t.dst, t.chunk)];
      if (is_empty(t.src, t.chunk)) {
        fail(fmt::format("{}: rank {} sends chunk {} that it does not hold", describe(id), t.src,
                         t.chunk));
        return result_;
      }

      // Collect the accesses this transfer must be ordered after.
      required.clear();
      for (const TransferId w : src.writes) required.push_back({w, Need::ReadAfterWrite});
      const bool new_run = !dst.reads.empty() || dst.writes.empty();
      const std::vector<TransferId>& before = dst.reads.empty() ? dst.prev_reads : dst.reads;
      for (const TransferId r : before) required.push_back({r, Need::WriteAfterRead});
      // A Copy must follow every write of the run; a Reduce only the run's Copies (Reduces
      // commute, and every write after a Copy in the run was already ordered after it).
      if (!new_run && (t.kind == TransferKind::Copy || dst.run_has_copy))
        for (const TransferId w : dst.writes)
          if (t.kind == TransferKind::Copy || plan_.transfers[w].kind == TransferKind::Copy)
            required.push_back({w, Need::WriteAfterWrite});
      const std::size_t missing = ancestry.first_missing(id, required);
      if (missing < required.size()) {
        fail(race(id, required[missing]));
        return result_;
      }

      // Update the runs.
      src.reads.push_back(id);
      if (!dst.reads.empty()) {
        dst.prev_reads = std::move(dst.reads);
        dst.reads.clear();
        dst.writes.clear();
        dst.run_has_copy = false;
      }
      dst.writes.push_back(id);
      dst.run_has_copy = dst.run_has_copy || t.kind == TransferKind::Copy;

      // Move the data.
      std::uint64_t* d = bits(t.dst, t.chunk);
      const std::uint64_t* s = bits(t.src, t.chunk);
      if (t.kind == TransferKind::Reduce) {
        for (std::size_t w = 0; w < words_; ++w) {
          if ((d[w] & s[w]) != 0) {
            const auto r = static_cast<std::uint32_t>(
                w * 64 + static_cast<std::size_t>(__builtin_ctzll(d[w] & s[w])));
            fail(fmt::format(
                "{}: double counting: rank {} already holds rank {}'s contribution to chunk {}",
                describe(id), t.dst, r, t.chunk));
            return result_;
          }
          d[w] |= s[w];
        }
      } else {
        std::copy(s, s + words_, d);
      }
    }
    check_end_state();
    return result_;
  }

 private:
  bool check_shape() {
    const Plan& p = plan_;
    if (p.ranks == 0) return fail("plan has no ranks");
    if (p.chunk_bytes.empty()) return fail("plan has no chunks");
    if (p.contributors > p.ranks)
      return fail(fmt::format("{} contributors but only {} ranks", p.contributors, p.ranks));
    const bool reduces = p.op == CollectiveOp::AllReduce || p.op == CollectiveOp::ReduceScatter ||
                         p.op == CollectiveOp::Reduce;
    if (reduces && p.contributors == 0) return fail("a reduction without contributors");
    if ((p.op == CollectiveOp::Broadcast || p.op == CollectiveOp::Reduce) && p.root >= p.ranks)
      return fail(fmt::format("root {} is not one of {} ranks", p.root, p.ranks));
    if (p.channels == 0) return fail("plan has no channels");
    if (p.op == CollectiveOp::ReduceScatter || p.op == CollectiveOp::AllGather) {
      if (p.chunk_owner.size() != p.chunk_bytes.size())
        return fail(fmt::format("{} chunks but {} chunk owners", p.chunk_bytes.size(),
                                p.chunk_owner.size()));
      for (std::size_t c = 0; c < p.chunk_owner.size(); ++c)
        if (p.chunk_owner[c] >= p.ranks)
          return fail(fmt::format("chunk {} is owned by rank {}, not a rank", c,
                                  p.chunk_owner[c]));
    }
    double sum = 0.0;
    for (std::size_t c = 0; c < p.chunk_bytes.size(); ++c) {
      const double b = p.chunk_bytes[c].bytes();
      if (!(b >= 0.0) || !std::isfinite(b))
        return fail(fmt::format("chunk {} has size {} bytes", c, b));
      sum += b;
    }
    const double total = p.total_bytes.bytes();
    if (std::abs(sum - total) > 1e-9 * std::max(1.0, std::abs(total)))
      return fail(fmt::format("chunk sizes add up to {} bytes, not the plan's {}", sum, total));
    return true;
  }

  bool check_transfers() {
    const Plan& p = plan_;
    for (TransferId id = 0; id < p.transfers.size(); ++id) {
      const Transfer& t = p.transfers[id];
      if (t.src >= p.ranks || t.dst >= p.ranks)
        return fail(fmt::format("{}: rank out of range (plan has {} ranks)", describe(id),
                                p.ranks));
      if (t.src == t.dst) return fail(fmt::format("{}: sends to itself", describe(id)));
      if (t.chunk >= p.chunk_bytes.size())
        return fail(fmt::format("{}: chunk out of range (plan has {} chunks)", describe(id),
                                p.chunk_bytes.size()));
      if (t.channel >= p.channels)
        return fail(fmt::format("{}: channel {} but the plan has {} channels", describe(id),
                                t.channel, p.channels));
      if (t.extra_deps != kNoDepSet && t.extra_deps >= p.extra_deps.size())
        return fail(fmt::format("{}: dependency set {} does not exist", describe(id),
                                t.extra_deps));
      bool backward = true;
      TransferId bad = 0;
      p.for_each_dep(id, [&](TransferId d) {
        if (d >= id && backward) {
          backward = false;
          bad = d;
        }
      });
      if (!backward)
        return fail(fmt::format("{}: depends on transfer {}, which does not come before it",
                                describe(id), bad));
    }
    return true;
  }

  void init_state() {
    const Plan& p = plan_;
    chunks_ = p.chunk_bytes.size();
    words_ = (std::size_t{p.ranks} + 63) / 64;
    state_.assign(std::size_t{p.ranks} * chunks_ * words_, 0);
    hazards_.assign(std::size_t{p.ranks} * chunks_, Hazards{});
    switch (p.op) {
      case CollectiveOp::AllReduce:
      case CollectiveOp::ReduceScatter:
      case CollectiveOp::Reduce:
        for (std::uint32_t r = 0; r < p.contributors; ++r)
          for (std::size_t c = 0; c < chunks_; ++c) set_bit(bits(r, c), r);
        break;
      case CollectiveOp::AllGather:
        for (std::size_t c = 0; c < chunks_; ++c)
          set_bit(bits(p.chunk_owner[c], c), p.chunk_owner[c]);
        break;
      case CollectiveOp::Broadcast:
        for (std::size_t c = 0; c < chunks_; ++c) set_bit(bits(p.root, c), p.root);
        break;
    }
  }

  void check_end_state() {
    const Plan& p = plan_;
    std::vector<std::uint64_t> all(words_, 0);
    for (std::uint32_t r = 0; r < p.contributors; ++r) set_bit(all.data(), r);
    std::vector<std::uint64_t> one(words_, 0);
    const auto expect = [&](std::uint32_t r, std::size_t c, const std::vector<std::uint64_t>& want,
                            const char* what) {
      if (std::equal(want.begin(), want.end(), bits(r, c))) return true;
      fail(fmt::format("{}: rank {} ends with chunk {} holding {} contributions, expected {}",
                       what, r, c, count(bits(r, c)), count(want.data())));
      return false;
    };
    switch (p.op) {
      case CollectiveOp::AllReduce:
        for (std::uint32_t r = 0; r < p.contributors; ++r)
          for (std::size_t c = 0; c < chunks_; ++c)
            if (!expect(r, c, all, "allreduce")) return;
        break;
      case CollectiveOp::ReduceScatter:
        for (std::size_t c = 0; c < chunks_; ++c)
          if (!expect(p.chunk_owner[c], c, all, "reducescatter")) return;
        break;
      case CollectiveOp::Reduce:
        for (std::size_t c = 0; c < chunks_; ++c)
          if (!expect(p.root, c, all, "reduce")) return;
        break;
      case CollectiveOp::AllGather:
        for (std::size_t c = 0; c < chunks_; ++c) {
          std::fill(one.begin(), one.end(), 0);
          set_bit(one.data(), p.chunk_owner[c]);
          for (std::uint32_t r = 0; r < p.ranks; ++r)
            if (!expect(r, c, one, "allgather")) return;
        }
        break;
      case CollectiveOp::Broadcast:
        std::fill(one.begin(), one.end(), 0);
        set_bit(one.data(), p.root);
        for (std::uint32_t r = 0; r < p.ranks; ++r)
          for (std::size_t c = 0; c < chunks_; ++c)
            if (!expect(r, c, one, "broadcast")) return;
        break;
    }
  }

  std::string describe(TransferId id) const {
    const Transfer& t = plan_.transfers[id];
    return fmt::format("transfer {} ({} {} → {}, chunk {})", id, to_string(t.kind), t.src, t.dst,
                       t.chunk);
  }

  std::string race(TransferId id, const Required& missing) const {
    const Transfer& t = plan_.transfers[id];
    switch (missing.need) {
      case Need::ReadAfterWrite:
        return fmt::format("race: {} reads rank {}'s chunk {} while {} writes it with no "
                           "dependency path between them",
                           describe(id), t.src, t.chunk, describe(missing.id));
      case Need::WriteAfterRead:
        return fmt::format("race: {} overwrites rank {}'s chunk {} while {} may still read it "
                           "(no dependency path)",
                           describe(id), t.dst, t.chunk, describe(missing.id));
      case Need::WriteAfterWrite:
        return fmt::format("race: {} and {} both write rank {}'s chunk {}, one of them a copy, "
                           "in no fixed order",
                           describe(id), describe(missing.id), t.dst, t.chunk);
    }
    return "race";
  }

  bool fail(std::string problem) {
    if (result_.ok) {
      result_.ok = false;
      result_.problem = std::move(problem);
    }
    return false;
  }

  [[nodiscard]] std::size_t location(std::uint32_t rank, std::size_t chunk) const {
    return std::size_t{rank} * chunks_ + chunk;
  }
  std::uint64_t* bits(std::uint32_t rank, std::size_t chunk) {
    return state_.data() + location(rank, chunk) * words_;
  }
  bool is_empty(std::uint32_t rank, std::size_t chunk) {
    const std::uint64_t* b = bits(rank, chunk);
    return std::all_of(b, b + words_, [](std::uint64_t w) { return w == 0; });
  }
  static void set_bit(std::uint64_t* b, std::uint32_t i) { b[i / 64] |= std::uint64_t{1} << (i % 64); }
  [[nodiscard]] std::size_t count(const std::uint64_t* b) const {
    std::size_t n = 0;
    for (std::size_t w = 0; w < words_; ++w) n += static_cast<std::size_t>(__builtin_popcountll(b[w]));
    return n;
  }

  const Plan& plan_;
  PlanCheck result_;
  std::size_t chunks_ = 0;
  std::size_t words_ = 0;
  std::vector<std::uint64_t> state_;
  std::vector<Hazards> hazards_;
};

}  // namespace

PlanCheck check_plan(const Plan& plan) {
  // A flows-only plan has no transfers to execute: it would pass vacuously.
  if (plan.flows_only) return PlanCheck{false, "a flows-only plan has no transfers to check"};
  return Checker(plan).run();
}

}  // namespace gradsync
