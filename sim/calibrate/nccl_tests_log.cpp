// Reading nccl-tests output (calibrate.hpp). Tolerant of spacing and of the NCCL_DEBUG lines
// that often sit between the rows; strict about everything else, so a truncated or mangled
// log is reported where it goes wrong instead of being fitted.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gradsync/calibrate/calibrate.hpp"
#include "gradsync/units/config_error.hpp"

namespace gradsync {
namespace {

struct Token {
  std::string text;
  int column = 0;  // 1-based
};

std::vector<Token> tokenize(std::string_view line, std::size_t from = 0) {
  std::vector<Token> out;
  std::size_t i = from;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back({std::string(line.substr(start, i - start)), static_cast<int>(start) + 1});
  }
  return out;
}

std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> to_integer(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

struct Accum {
  NcclTestsRow row;
  double time = 0, algbw = 0, busbw = 0, in_time = 0, in_busbw = 0;
};

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& display_name) {
  NcclTestsLog log;
  log.file = display_name;
  auto fail = [&](int line, int column, const std::string& what) -> void {
    throw ConfigError(SourceMark{display_name, line, column}, what);
  };

  std::map<long long, Accum> by_size;
  std::set<std::string> hosts_seen;
  std::set<long long> segment_ranks;  // rank ids of the current block of rank lines
  int segment_line = 0;
  int first_segment_ranks = -1;
  auto close_segment = [&] {
    if (segment_ranks.empty()) return;
    const int n = static_cast<int>(segment_ranks.size());
    if (first_segment_ranks < 0) {
      first_segment_ranks = n;
    } else if (n != first_segment_ranks) {
      fail(segment_line, 1,
           fmt::format("this run lists {} ranks, an earlier run {}: one log, one job size", n,
                       first_segment_ranks));
    }
    segment_ranks.clear();
  };

  std::optional<bool> header_has_root;  // from the last column header
  bool table_open = false;              // a header was seen and no data row yet
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    const bool last = end >= text.size();
    pos = end + 1;

    std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      if (last) break;
      continue;
    }
    {
      // `srun --label` prefixes every line with the task number: "0: ...".
      std::size_t d = first;
      while (d < line.size() && line[d] >= '0' && line[d] <= '9') ++d;
      if (d > first && d < line.size() && line[d] == ':') {
        first = line.find_first_not_of(" \t", d + 1);
        if (first == std::string_view::npos) {
          if (last) break;
          continue;
        }
      }
    }
    if (line[first] == '#') {
      const std::vector<Token> t = tokenize(line, first + 1);
      // "# nThread 1 nGpus 8 minBytes 8 maxBytes ...": the GPUs each thread drives (-g).
      for (std::size_t i = 0; i + 1 < t.size(); ++i)
        if (t[i].text == "nGpus") {
          const auto g = to_integer(t[i + 1].text);
          if (!g || *g < 1 || *g > 1024)
            fail(line_no, t[i + 1].column, "nGpus needs a GPU count (1 to 1024)");
          log.gpus_per_thread = static_cast<int>(*g);
        }
      if (t.size() >= 2 && t[0].text == "Rank") {
        const auto id = to_integer(t[1].text);
        if (!id || *id < 0) fail(line_no, t[1].column, "a rank line needs a rank number");
        if (segment_ranks.count(*id) != 0 || (*id == 0 && !segment_ranks.empty())) close_segment();
        if (segment_ranks.empty()) segment_line = line_no;
        segment_ranks.insert(*id);
        for (std::size_t i = 2; i + 1 < t.size(); ++i) {
          if (t[i].text == "on") {
            if (hosts_seen.insert(t[i + 1].text).second) log.hosts.push_back(t[i + 1].text);
            break;
          }
        }
        if (*id == 0 && log.device.empty()) {
          // "... device 0 [0x18] NVIDIA H100 80GB HBM3": the words after the bus id.
          for (std::size_t i = 2; i < t.size(); ++i) {
            if (t[i].text.rfind("[0x", 0) == 0) {
              for (std::size_t j = i + 1; j < t.size(); ++j)
                log.device += (log.device.empty() ? "" : " ") + t[j].text;
              break;
            }
          }
        }
        continue;
      }
      close_segment();
      const std::string_view rest = line.substr(first + 1);
      if (rest.find("Avg bus bandwidth") != std::string_view::npos) {
        const auto colon = rest.find(':');
        if (colon != std::string_view::npos) {
          const auto v = tokenize(rest, colon + 1);
          if (!v.empty())
            if (auto x = to_number(v[0].text)) log.avg_busbw_GBps = *x;
        }
        continue;
      }
      bool has_size = false, has_time = false, has_root = false;
      for (const Token& k : t) {
        has_size = has_size || k.text == "size";
        has_time = has_time || k.text == "time";
        has_root = has_root || k.text == "root";
      }
      if (has_size && has_time) {
        header_has_root = has_root;
        table_open = true;
      }
      if (last) break;
      continue;
    }
    // NCCL_DEBUG=INFO/WARN lines ("host:pid:tid [0] NCCL INFO ...") interleave with the table.
    if (line.find(" NCCL INFO") != std::string_view::npos ||
        line.find(" NCCL WARN") != std::string_view::npos) {
      if (last) break;
      continue;
    }
    close_segment();

    const std::vector<Token> t = tokenize(line, first);
    if (!to_integer(t[0].text))
      fail(line_no, t[0].column,
           fmt::format("expected a '#' comment or a data row starting with the size in bytes, "
                       "found '{}'",
                       t[0].text));
    const bool root = header_has_root.value_or(t.size() == 9 || t.size() == 13);
    const std::size_t out_cols = root ? 9 : 8;  // size count type redop [root] time algbw busbw wrong
    if (t.size() != out_cols && t.size() != out_cols + 4) {
      const std::size_t want = out_cols + 4;
      const int col = t.size() > want ? t[want].column : static_cast<int>(line.size()) + 1;
      fail(line_no, col,
           fmt::format("a data row has {} columns (size count type redop{} time algbw busbw "
                       "#wrong, then the in-place time algbw busbw #wrong), found {}",
                       want, root ? " root" : "", t.size()));
    }
    auto integer = [&](std::size_t i, const char* what) {
      const auto v = to_integer(t[i].text);
      if (!v || *v < 0)
        fail(line_no, t[i].column,
             fmt::format("'{}' is not a {} (a whole number >= 0)", t[i].text, what));
      return *v;
    };
    // Times and rates nccl-tests can print: below 1e12 (a time of 11 days in us, or 1000 TB/s),
    // so that sums of several runs stay finite and a corrupt value is caught here.
    constexpr double kMaxValue = 1e12;
    auto number = [&](std::size_t i, const char* what) {
      const auto v = to_number(t[i].text);
      if (!v || *v < 0)
        fail(line_no, t[i].column, fmt::format("'{}' is not a {} (a number >= 0)", t[i].text, what));
      if (*v >= kMaxValue)
        fail(line_no, t[i].column,
             fmt::format("'{}' is not a plausible {} (at most 1e12)", t[i].text, what));
      return *v;
    };
    NcclTestsRow row;
    row.line = line_no;
    row.bytes = static_cast<double>(integer(0, "size in bytes"));
    row.count = integer(1, "element count");
    row.type = t[2].text;
    row.redop = t[3].text;
    std::size_t c = 4;
    if (root) {
      const auto r = to_integer(t[4].text);
      if (!r) fail(line_no, t[4].column, fmt::format("'{}' is not a root rank", t[4].text));
      row.root = static_cast<int>(*r);
      c = 5;
    }
    row.time_us = number(c, "time in us");
    row.algbw_GBps = number(c + 1, "algbw in GB/s");
    row.busbw_GBps = number(c + 2, "busbw in GB/s");
    if (t.size() > out_cols) {
      row.in_place_time_us = number(c + 4, "in-place time in us");
      (void)number(c + 5, "in-place algbw in GB/s");
      row.in_place_busbw_GBps = number(c + 6, "in-place busbw in GB/s");
    }
    if (table_open) {
      ++log.runs;
      table_open = false;
    }
    const auto key = static_cast<long long>(row.bytes);
    auto [it, fresh] = by_size.try_emplace(key);
    Accum& a = it->second;
    if (fresh) a.row = row;
    a.time += row.time_us;
    a.algbw += row.algbw_GBps;
    a.busbw += row.busbw_GBps;
    a.in_time += row.in_place_time_us;
    a.in_busbw += row.in_place_busbw_GBps;
    ++a.row.samples;
    if (last) break;
  }
  close_segment();
  if (by_size.empty())
    fail(1, 1, "no data rows (size count type redop root time algbw busbw ...): is this "
               "nccl-tests output?");
  if (log.runs == 0) log.runs = 1;  // rows without a column header
  log.ranks = std::max(first_segment_ranks, 0);
  for (auto& [bytes, a] : by_size) {
    const double n = a.row.samples;
    a.row.time_us = a.time / n;
    a.row.algbw_GBps = a.algbw / n;
    a.row.busbw_GBps = a.busbw / n;
    a.row.in_place_time_us = a.in_time / n;
    a.row.in_place_busbw_GBps = a.in_busbw / n;
    log.rows.push_back(a.row);
  }
  return log;
}

double fit_time_us(const NcclTestsRow& row) {
  return row.in_place_time_us > 0.0 ? std::min(row.time_us, row.in_place_time_us) : row.time_us;
}

double fit_busbw_GBps(const NcclTestsRow& row) {
  const double t = fit_time_us(row);
  return t > 0.0 && row.time_us > 0.0 ? row.busbw_GBps * row.time_us / t : row.busbw_GBps;
}

}  // namespace gradsync
