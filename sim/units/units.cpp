// Parsing and formatting of sizes, rates and times (see include/gradsync/units/units.hpp).
//
// One parser serves all three families so that the grammar (number, optional spaces, unit)
// and the error messages stay identical everywhere. Units are matched exactly and
// case-sensitively: `b` vs `B` and `m` vs `M` change a value by 8x or 1e9x, so guessing would
// turn a typo into a silently wrong simulation. When a unit is rejected, the message says
// what was expected, and names the likely mistake (a rate where a size belongs, "mb").
#include "gradsync/units/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>
#include <system_error>

namespace gradsync {
namespace {

enum class Dimension { kSize, kRate, kTime };

// A unit converts a number to the base unit (bytes, bytes/s, seconds) as value * mul / div.
// Keeping a divisor lets "1.5us" become 1.5 / 1e6, which is the correctly rounded 1.5e-6,
// where 1.5 * 1e-6 could be one ulp off.
struct Scale {
  double mul = 1.0;
  double div = 1.0;
};

struct NamedScale {
  std::string_view name;
  Scale scale;
};

constexpr std::array<NamedScale, 12> kPrefixes{{
    {"", {1.0, 1.0}},
    {"k", {1e3, 1.0}},
    {"K", {1e3, 1.0}},
    {"M", {1e6, 1.0}},
    {"G", {1e9, 1.0}},
    {"T", {1e12, 1.0}},
    {"P", {1e15, 1.0}},
    {"Ki", {1024.0, 1.0}},
    {"Mi", {1048576.0, 1.0}},
    {"Gi", {1073741824.0, 1.0}},
    {"Ti", {1099511627776.0, 1.0}},
    {"Pi", {1125899906842624.0, 1.0}},
}};

// Bits are divided by 8 rather than multiplied by 0.125 only for symmetry; both are exact.
constexpr std::array<NamedScale, 2> kSizeSuffixes{{
    {"b", {1.0, 8.0}},
    {"B", {1.0, 1.0}},
}};

constexpr std::array<NamedScale, 4> kRateSuffixes{{
    {"bps", {1.0, 8.0}},
    {"b/s", {1.0, 8.0}},
    {"Bps", {1.0, 1.0}},
    {"B/s", {1.0, 1.0}},
}};

// Both the micro sign (U+00B5) and the Greek mu (U+03BC) are accepted: they look the same,
// and which one a keyboard produces varies.
constexpr std::array<NamedScale, 9> kTimeUnits{{
    {"ps", {1.0, 1e12}},
    {"ns", {1.0, 1e9}},
    {"us", {1.0, 1e6}},
    {"\u00b5s", {1.0, 1e6}},
    {"\u03bcs", {1.0, 1e6}},
    {"ms", {1.0, 1e3}},
    {"s", {1.0, 1.0}},
    {"min", {60.0, 1.0}},
    {"h", {3600.0, 1.0}},
}};

struct DimensionText {
  std::string_view noun;
  std::string_view example;   // shown when the unit is missing
  std::string_view expected;  // shown when the unit is unknown
};

DimensionText text_of(Dimension dim) {
  switch (dim) {
    case Dimension::kSize:
      return {"size", "write e.g. 25MiB or 1GB", "expected b, B, KB, MiB, ..."};
    case Dimension::kRate:
      return {"bandwidth", "write e.g. 400Gbps or 50GB/s",
              "expected bps, b/s, Bps or B/s with a prefix, e.g. Gbps, GB/s, GiB/s"};
    case Dimension::kTime:
      return {"time", "write e.g. 1.5us or 10ms", "expected ps, ns, us, \u00b5s, ms, s, min or h"};
  }
  return {};
}

std::optional<Scale> find_exact(std::span<const NamedScale> table, std::string_view unit) {
  for (const auto& entry : table) {
    if (entry.name == unit) {
      return entry.scale;
    }
  }
  return std::nullopt;
}

// A prefixed unit: every prefix combined with every suffix, matched as a whole so that
// "KiB" can only be Ki + B and never K + "iB".
std::optional<Scale> find_prefixed(std::span<const NamedScale> suffixes, std::string_view unit) {
  for (const auto& prefix : kPrefixes) {
    if (!unit.starts_with(prefix.name)) {
      continue;
    }
    if (auto suffix = find_exact(suffixes, unit.substr(prefix.name.size()))) {
      return Scale{prefix.scale.mul * suffix->mul, prefix.scale.div * suffix->div};
    }
  }
  return std::nullopt;
}

std::optional<Scale> find_unit(Dimension dim, std::string_view unit) {
  switch (dim) {
    case Dimension::kSize:
      return find_prefixed(kSizeSuffixes, unit);
    case Dimension::kRate:
      return find_prefixed(kRateSuffixes, unit);
    case Dimension::kTime:
      return find_exact(kTimeUnits, unit);
  }
  return std::nullopt;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_blank(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// Explains a unit that is valid, but for another dimension or with a likely typo, so the
// user learns what went wrong rather than just "unknown unit".
std::string explain_unknown_unit(Dimension dim, std::string_view unit, std::string_view text) {
  const DimensionText what = text_of(dim);
  for (Dimension other : {Dimension::kSize, Dimension::kRate, Dimension::kTime}) {
    if (other != dim && find_unit(other, unit)) {
      return fmt::format("\"{}\" is a {}, not a {} ({})", text, text_of(other).noun, what.noun,
                         what.example);
    }
  }
  if (dim != Dimension::kTime && unit.size() > 1 && unit.front() == 'm') {
    // "mb" is the classic: it reads as megabits but SI says millibits. Refuse, and say so.
    const std::string_view suffix = unit.substr(1);
    if (find_exact(kSizeSuffixes, suffix) || find_exact(kRateSuffixes, suffix)) {
      const bool bits = suffix.front() == 'b';
      std::string as_bits = fmt::format("M{}", suffix);
      std::string as_bytes = as_bits;
      as_bits[1] = 'b';
      as_bytes[1] = 'B';
      return fmt::format(
          "unit \"{}\" in \"{}\" is not mega{}: a lowercase m means milli (write {} for "
          "megabits or {} for megabytes)",
          unit, text, bits ? "bits" : "bytes", as_bits, as_bytes);
    }
  }
  if (dim == Dimension::kTime && unit == "m") {
    return fmt::format(
        "unknown time unit \"m\" in \"{}\" (write min for minutes or ms for milliseconds)", text);
  }
  // Prefixes are case-sensitive; suggest the capitalized one when it would be valid ("gb").
  if (unit.front() >= 'a' && unit.front() <= 'z') {
    std::string upper(unit);
    upper[0] = static_cast<char>(upper[0] - 'a' + 'A');
    if (find_unit(dim, upper)) {
      return fmt::format(
          "unknown {} unit \"{}\" in \"{}\" (prefixes are case-sensitive: did you mean {}?)",
          what.noun, unit, text, upper);
    }
  }
  return fmt::format("unknown {} unit \"{}\" in \"{}\" ({})", what.noun, unit, text,
                     what.expected);
}

// The grammar shared by all parsers: number, optional blanks, unit. Returns the value in the
// base unit of `dim`.
double parse_quantity(Dimension dim, std::string_view raw) {
  const DimensionText what = text_of(dim);
  const std::string_view text = trim(raw);
  if (text.empty()) {
    throw UnitError(fmt::format("empty {} ({})", what.noun, what.example));
  }

  // from_chars, not strtod/stod: it ignores the locale (a German locale would otherwise read
  // "1.5" as 1) and reports exactly how much it consumed.
  double value = 0.0;
  const char* const first = text.data();
  const char* const last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ec == std::errc::invalid_argument) {
    throw UnitError(fmt::format("{} \"{}\" does not start with a number ({})", what.noun, text,
                                what.example));
  }
  if (ec == std::errc::result_out_of_range) {
    throw UnitError(fmt::format("number in {} \"{}\" is out of range", what.noun, text));
  }
  if (text.front() == '-') {
    throw UnitError(fmt::format("{} \"{}\" is negative", what.noun, text));
  }
  if (!std::isfinite(value)) {
    throw UnitError(fmt::format("{} \"{}\" is not a finite number", what.noun, text));
  }

  std::string_view rest = trim(text.substr(static_cast<std::size_t>(end - first)));
  if (rest.empty()) {
    // A bare 0 is unambiguous in every unit, and "latency: 0" is too natural to refuse.
    if (value == 0.0) {
      return 0.0;
    }
    throw UnitError(fmt::format("{} \"{}\" has no unit ({})", what.noun, text, what.example));
  }
  const char next = rest.front();
  if (next == ',') {
    throw UnitError(fmt::format("malformed number in {} \"{}\" (use a decimal point, not a comma)",
                                what.noun, text));
  }
  if ((next >= '0' && next <= '9') || next == '.' || next == '+' || next == '-') {
    throw UnitError(fmt::format("malformed number in {} \"{}\"", what.noun, text));
  }

  std::string_view unit = rest;
  std::string_view tail;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (is_blank(rest[i])) {
      unit = rest.substr(0, i);
      tail = trim(rest.substr(i));
      break;
    }
  }
  const std::optional<Scale> scale = find_unit(dim, unit);
  if (!scale) {
    throw UnitError(explain_unknown_unit(dim, unit, text));
  }
  if (!tail.empty()) {
    throw UnitError(
        fmt::format("unexpected \"{}\" after the unit in {} \"{}\"", tail, what.noun, text));
  }
  const double result = value * scale->mul / scale->div;
  if (!std::isfinite(result)) {
    throw UnitError(fmt::format("{} \"{}\" is too large", what.noun, text));
  }
  return result;
}

// Formats `value` (in the base unit) with the largest unit in which it reads as at least 1
// after rounding to 4 significant digits, so 0.99999 s prints as "1 s", not "1000 ms".
// `units` is ordered from smallest to largest; `zero_unit` is used for 0.
std::string format_quantity(double value, std::span<const NamedScale> units,
                            std::string_view zero_unit) {
  if (value == 0.0) {
    return fmt::format("0 {}", zero_unit);
  }
  if (!std::isfinite(value)) {
    return fmt::format("{} {}", value, zero_unit);
  }
  const std::string_view sign = value < 0.0 ? "-" : "";
  const double magnitude = std::fabs(value);
  for (std::size_t i = units.size(); i-- > 0;) {
    const NamedScale& unit = units[i];
    const double scaled = magnitude * unit.scale.div / unit.scale.mul;
    std::string digits = fmt::format("{:.4g}", scaled);
    double shown = 0.0;
    std::from_chars(digits.data(), digits.data() + digits.size(), shown);
    if (shown >= 1.0 || i == 0) {
      return fmt::format("{}{} {}", sign, digits, unit.name);
    }
  }
  return {};  // unreachable: the loop always returns at i == 0
}

constexpr std::array<NamedScale, 6> kSizeFormats{{
    {"B", {1.0, 1.0}},
    {"KiB", {1024.0, 1.0}},
    {"MiB", {1048576.0, 1.0}},
    {"GiB", {1073741824.0, 1.0}},
    {"TiB", {1099511627776.0, 1.0}},
    {"PiB", {1125899906842624.0, 1.0}},
}};

// Rates print in decimal units, the convention of link datasheets and nccl-tests.
constexpr std::array<NamedScale, 6> kRateFormats{{
    {"B/s", {1.0, 1.0}},
    {"kB/s", {1e3, 1.0}},
    {"MB/s", {1e6, 1.0}},
    {"GB/s", {1e9, 1.0}},
    {"TB/s", {1e12, 1.0}},
    {"PB/s", {1e15, 1.0}},
}};

constexpr std::array<NamedScale, 6> kRateBitFormats{{
    {"bps", {1.0, 8.0}},
    {"kbps", {1e3, 8.0}},
    {"Mbps", {1e6, 8.0}},
    {"Gbps", {1e9, 8.0}},
    {"Tbps", {1e12, 8.0}},
    {"Pbps", {1e15, 8.0}},
}};

// ASCII "us" rather than "µs": output must survive any terminal and CSV consumer.
constexpr std::array<NamedScale, 7> kTimeFormats{{
    {"ps", {1.0, 1e12}},
    {"ns", {1.0, 1e9}},
    {"us", {1.0, 1e6}},
    {"ms", {1.0, 1e3}},
    {"s", {1.0, 1.0}},
    {"min", {60.0, 1.0}},
    {"h", {3600.0, 1.0}},
}};

}  // namespace

Bytes parse_size(std::string_view text) { return Bytes(parse_quantity(Dimension::kSize, text)); }

BytesPerSecond parse_rate(std::string_view text) {
  return BytesPerSecond(parse_quantity(Dimension::kRate, text));
}

Seconds parse_time(std::string_view text) {
  return Seconds(parse_quantity(Dimension::kTime, text));
}

std::string format_size(Bytes b) { return format_quantity(b.bytes(), kSizeFormats, "B"); }

std::string format_rate(BytesPerSecond r) {
  return format_quantity(r.bytes_per_second(), kRateFormats, "B/s");
}

std::string format_rate_bits(BytesPerSecond r) {
  return format_quantity(r.bytes_per_second(), kRateBitFormats, "bps");
}

std::string format_time(Seconds t) { return format_quantity(t.seconds(), kTimeFormats, "s"); }

std::string format_percent(double share) { return fmt::format("{:.0f} %", 100.0 * share); }

double parse_param_count(std::string_view raw) {
  const std::string_view text = trim(raw);
  const std::string_view example = "e.g. 7e9, 7B, 350M, 1.5T";
  if (text.empty()) throw UnitError(fmt::format("empty parameter count ({})", example));
  if (text.front() == '-')
    throw UnitError(fmt::format("parameter count \"{}\" is negative", text));
  double value = 0.0;
  const char* const first = text.data();
  const char* const last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ec == std::errc::invalid_argument)
    throw UnitError(
        fmt::format("parameter count \"{}\" does not start with a number ({})", text, example));
  if (ec == std::errc::result_out_of_range || !std::isfinite(value))
    throw UnitError(fmt::format("parameter count \"{}\" is out of range", text));
  const std::string_view suffix = trim(text.substr(static_cast<std::size_t>(end - first)));
  if (suffix.empty()) return value;
  if (suffix.size() == 1) {
    double scale = 0.0;
    switch (suffix.front()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'b': case 'B': scale = 1e9; break;
      case 't': case 'T': scale = 1e12; break;
      default: break;
    }
    if (scale > 0.0) {
      // "1e300T" is a finite number times a suffix that overflows: out of range, not inf.
      const double result = value * scale;
      if (!std::isfinite(result))
        throw UnitError(fmt::format("parameter count \"{}\" is out of range", text));
      return result;
    }
  }
  throw UnitError(fmt::format(
      "parameter count \"{}\" has an unknown suffix \"{}\" (K = 1e3, M = 1e6, B = 1e9, T = 1e12; {})",
      text, suffix, example));
}

}  // namespace gradsync
