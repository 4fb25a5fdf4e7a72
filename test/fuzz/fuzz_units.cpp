// libFuzzer harness: the unit parsers of include/gradsync/units/units.hpp on the same text.
// Contract (units.hpp): a value is returned finite and >= 0, or UnitError is thrown; a parsed
// size, rate or time formats to text (format_*) that parses back to the value within the 4
// significant digits the formatter prints.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_contract.hpp"
#include "gradsync/units/units.hpp"

namespace {

[[noreturn]] void broken(const char* what, std::string_view input, double value,
                         const std::string& detail = "") {
  std::fprintf(stderr, "\n==gradsync-fuzz== %s: input of %zu bytes gave %.17g %s\n", what,
               input.size(), value, detail.c_str());
  std::abort();
}

void check_value(const char* parser, std::string_view input, double v) {
  if (!std::isfinite(v) || v < 0.0 || std::signbit(v))
    broken(parser, input, v, "(expected finite and >= 0, or UnitError)");
}

// format_X(v) must parse back with parse_X to v within the formatter's rounding.
template <typename Quantity, typename Format, typename Parse, typename Get>
void check_round_trip(const char* name, std::string_view input, Quantity q, Format format,
                      Parse parse, Get get) {
  const double v = get(q);
  // Subnormal and astronomically large values are outside what the formatter promises.
  if (v != 0.0 && !(v >= 1e-30 && v <= 1e30)) return;
  const std::string text = format(q);
  double back = 0.0;
  try {
    back = get(parse(text));
  } catch (const gradsync::UnitError& e) {
    broken(name, input, v, "formats as '" + text + "', which does not parse back: " + e.what());
  }
  const double tolerance = 1e-3 * v;
  if (!(std::fabs(back - v) <= tolerance))
    broken(name, input, v, "formats as '" + text + "', which parses back as another value");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256) return 0;  // a unit string is a few characters; longer only slows things
  const std::string owned = gradsync::fuzz::text_of(data, size);
  const std::string_view input(owned);
  using namespace gradsync;

  try {
    const Bytes b = parse_size(input);
    check_value("parse_size", input, b.bytes());
    check_round_trip("parse_size/format_size", input, b, format_size,
                     [](std::string_view t) { return parse_size(t); },
                     [](Bytes x) { return x.bytes(); });
  } catch (const UnitError&) {
  }
  try {
    const BytesPerSecond r = parse_rate(input);
    check_value("parse_rate", input, r.bytes_per_second());
    check_round_trip("parse_rate/format_rate", input, r, format_rate,
                     [](std::string_view t) { return parse_rate(t); },
                     [](BytesPerSecond x) { return x.bytes_per_second(); });
    check_round_trip("parse_rate/format_rate_bits", input, r, format_rate_bits,
                     [](std::string_view t) { return parse_rate(t); },
                     [](BytesPerSecond x) { return x.bytes_per_second(); });
  } catch (const UnitError&) {
  }
  try {
    const Seconds t = parse_time(input);
    check_value("parse_time", input, t.seconds());
    check_round_trip("parse_time/format_time", input, t, format_time,
                     [](std::string_view s) { return parse_time(s); },
                     [](Seconds x) { return x.seconds(); });
  } catch (const UnitError&) {
  }
  try {
    check_value("parse_param_count", input, parse_param_count(input));
  } catch (const UnitError&) {
  }
  return 0;
}
