// Units: the parsers accept exactly the documented grammar (README.md, Units), reject everything
// else with a message that says what was expected, and the formatters round-trip. A wrong
// factor here (bits for bytes, 1e6 for 2^20) would skew every simulated time, so each prefix
// of each unit family is checked against its value.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <type_traits>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/memory_budget.hpp"
#include "gradsync/units/units.hpp"

namespace {

using gradsync::Bytes;
using gradsync::BytesPerSecond;
using gradsync::ConfigError;
using gradsync::Seconds;
using gradsync::SourceMark;
using gradsync::UnitError;
using gradsync::format_percent;
using gradsync::format_rate;
using gradsync::format_rate_bits;
using gradsync::format_size;
using gradsync::format_time;
using gradsync::parse_rate;
using gradsync::parse_size;
using gradsync::parse_time;

struct Prefix {
  std::string_view text;
  double factor;
};

constexpr std::array<Prefix, 12> kAllPrefixes{{
    {"", 1.0},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"Ki", 1024.0},
    {"Mi", 1024.0 * 1024.0},
    {"Gi", 1024.0 * 1024.0 * 1024.0},
    {"Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0},
    {"Pi", 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0},
}};

// The message of the UnitError that parsing `text` throws, or "" when it parses. Tests check
// substrings, so a message can gain detail without breaking them.
template <typename Parser>
std::string error_of(Parser parse, std::string_view text) {
  try {
    (void)parse(text);
  } catch (const UnitError& e) {
    return e.what();
  }
  return "";
}

std::string size_error(std::string_view text) { return error_of(parse_size, text); }
std::string rate_error(std::string_view text) { return error_of(parse_rate, text); }
std::string time_error(std::string_view text) { return error_of(parse_time, text); }

bool has(const std::string& message, std::string_view part) {
  return message.find(part) != std::string::npos;
}

}  // namespace

// --- sizes ----------------------------------------------------------------------------------

TEST_CASE("parse_size: bytes and bits with every prefix") {
  for (const Prefix& prefix : kAllPrefixes) {
    const std::string bytes = "3" + std::string(prefix.text) + "B";
    const std::string bits = "3" + std::string(prefix.text) + "b";
    CAPTURE(bytes);
    CHECK(parse_size(bytes).bytes() == doctest::Approx(3.0 * prefix.factor).epsilon(1e-12));
    CHECK(parse_size(bits).bytes() == doctest::Approx(3.0 * prefix.factor / 8.0).epsilon(1e-12));
  }
}

TEST_CASE("parse_size: decimal and binary prefixes are distinct and exact") {
  CHECK(parse_size("1B").bytes() == 1.0);
  CHECK(parse_size("8b").bytes() == 1.0);  // the header's own example
  CHECK(parse_size("1b").bytes() == 0.125);
  CHECK(parse_size("1kB").bytes() == 1e3);
  CHECK(parse_size("1KB").bytes() == 1e3);
  CHECK(parse_size("25MB").bytes() == 25e6);
  CHECK(parse_size("1GB").bytes() == 1e9);
  CHECK(parse_size("2TB").bytes() == 2e12);
  CHECK(parse_size("1PB").bytes() == 1e15);
  CHECK(parse_size("1KiB").bytes() == 1024.0);
  CHECK(parse_size("25MiB").bytes() == 25.0 * 1048576.0);
  CHECK(parse_size("1GiB").bytes() == 1073741824.0);
  CHECK(parse_size("1TiB").bytes() == 1099511627776.0);
  CHECK(parse_size("1PiB").bytes() == 1125899906842624.0);
  CHECK(parse_size("1Gb").bytes() == 1.25e8);
  CHECK(parse_size("1Gib").bytes() == 1073741824.0 / 8.0);
  CHECK(parse_size("1MiB") > parse_size("1MB"));
  CHECK(parse_size("1GB") > parse_size("1Gb"));
  // 7e9 parameters in fp16, 2 bytes each.
  CHECK(parse_size("14GB").bytes() == 2.0 * 7e9);
}

// --- rates ----------------------------------------------------------------------------------

TEST_CASE("parse_rate: bps, b/s, Bps and B/s with every prefix") {
  for (const Prefix& prefix : kAllPrefixes) {
    const std::string p(prefix.text);
    CAPTURE(p);
    CHECK(parse_rate("5" + p + "bps").bytes_per_second() ==
          doctest::Approx(5.0 * prefix.factor / 8.0).epsilon(1e-12));
    CHECK(parse_rate("5" + p + "b/s").bytes_per_second() ==
          doctest::Approx(5.0 * prefix.factor / 8.0).epsilon(1e-12));
    CHECK(parse_rate("5" + p + "Bps").bytes_per_second() ==
          doctest::Approx(5.0 * prefix.factor).epsilon(1e-12));
    CHECK(parse_rate("5" + p + "B/s").bytes_per_second() ==
          doctest::Approx(5.0 * prefix.factor).epsilon(1e-12));
  }
}

TEST_CASE("parse_rate: the link speeds users write") {
  CHECK(parse_rate("400Gbps").bytes_per_second() == 50e9);
  CHECK(parse_rate("400Gb/s").bytes_per_second() == 50e9);
  CHECK(parse_rate("50GB/s").bytes_per_second() == 50e9);
  CHECK(parse_rate("50GBps").bytes_per_second() == 50e9);
  CHECK(parse_rate("400Gbps") == parse_rate("50GB/s"));
  CHECK(parse_rate("25GiB/s").bytes_per_second() == 25.0 * 1073741824.0);
  CHECK(parse_rate("450GB/s").gigabytes_per_second() == 450.0);
  CHECK(parse_rate("100Mbps").bits_per_second() == 100e6);
  CHECK(parse_rate("10kbps").bytes_per_second() == 1250.0);
  CHECK(parse_rate("1Tbps").bytes_per_second() == 125e9);
  CHECK(parse_rate("8bps").bytes_per_second() == 1.0);
}

// --- times ----------------------------------------------------------------------------------

TEST_CASE("parse_time: every unit") {
  CHECK(parse_time("1ps").seconds() == 1e-12);
  CHECK(parse_time("300ns").seconds() == doctest::Approx(300e-9).epsilon(1e-15));
  CHECK(parse_time("1.5us").seconds() == 1.5e-6);
  CHECK(parse_time("1.5\u00b5s").seconds() == 1.5e-6);  // micro sign
  CHECK(parse_time("1.5\u03bcs").seconds() == 1.5e-6);  // Greek mu, which looks the same
  CHECK(parse_time("12ms").seconds() == doctest::Approx(0.012).epsilon(1e-15));
  CHECK(parse_time("2s").seconds() == 2.0);
  CHECK(parse_time("3min").seconds() == 180.0);
  CHECK(parse_time("2h").seconds() == 7200.0);
  CHECK(parse_time("500ns") < parse_time("1us"));
  CHECK(parse_time("1us").microseconds() == doctest::Approx(1.0));
}

// --- grammar --------------------------------------------------------------------------------

TEST_CASE("parsers: optional spaces between number and unit, and around the value") {
  CHECK(parse_size("25 MiB").bytes() == 25.0 * 1048576.0);
  CHECK(parse_size("25\tMiB").bytes() == 25.0 * 1048576.0);
  CHECK(parse_size("  25MiB  ").bytes() == 25.0 * 1048576.0);
  CHECK(parse_rate("400 Gbps").bytes_per_second() == 50e9);
  CHECK(parse_rate("50   GB/s").bytes_per_second() == 50e9);
  CHECK(parse_time("1.5 us").seconds() == 1.5e-6);
  CHECK(parse_time(" 3 min ").seconds() == 180.0);
}

TEST_CASE("parsers: decimals and exponents") {
  CHECK(parse_size("7e9B").bytes() == 7e9);
  CHECK(parse_size("7E9 B").bytes() == 7e9);
  CHECK(parse_size("1.5KiB").bytes() == 1536.0);
  CHECK(parse_size(".5KB").bytes() == 500.0);
  CHECK(parse_size("2.KB").bytes() == 2000.0);
  CHECK(parse_size("1e+3B").bytes() == 1000.0);
  CHECK(parse_rate("1.6e3Gbps").bytes_per_second() == 200e9);
  CHECK(parse_time("2e-6s").seconds() == 2e-6);
  CHECK(parse_time("1.5e3ms").seconds() == 1.5);
  CHECK(parse_time("0.5h").seconds() == 1800.0);
}

TEST_CASE("parsers: the literal zero needs no unit") {
  CHECK(parse_size("0").bytes() == 0.0);
  CHECK(parse_size("0.0").bytes() == 0.0);
  CHECK(parse_rate("0").bytes_per_second() == 0.0);
  CHECK(parse_time("0").seconds() == 0.0);
  CHECK(parse_time("0.0").seconds() == 0.0);
  CHECK(parse_time(" 0 ").seconds() == 0.0);
  // Zero with a unit is fine too.
  CHECK(parse_size("0GB").bytes() == 0.0);
  CHECK(parse_rate("0 Gbps").bytes_per_second() == 0.0);
  CHECK(parse_time("0us").seconds() == 0.0);
}

// --- rejections -----------------------------------------------------------------------------

TEST_CASE("parsers: a number without unit is an error that shows how to write it") {
  CHECK_THROWS_WITH_AS((void)parse_rate("400"),
                       "bandwidth \"400\" has no unit (write e.g. 400Gbps or 50GB/s)", UnitError);
  CHECK(has(size_error("25"), "size \"25\" has no unit"));
  CHECK(has(size_error("25"), "MiB"));
  CHECK(has(time_error("1.5"), "time \"1.5\" has no unit"));
  CHECK(has(time_error("1.5"), "us"));
  CHECK(has(time_error("1e-6"), "has no unit"));
}

TEST_CASE("parsers: unknown units list what is expected") {
  CHECK_THROWS_WITH_AS((void)parse_size("25MBs"),
                       "unknown size unit \"MBs\" in \"25MBs\" (expected b, B, KB, MiB, ...)",
                       UnitError);
  CHECK(has(size_error("1EB"), "unknown size unit \"EB\""));
  CHECK(has(size_error("1 bytes"), "unknown size unit \"bytes\""));
  CHECK(has(size_error("1KIB"), "unknown size unit \"KIB\""));
  CHECK(has(rate_error("1Gbit/s"), "unknown bandwidth unit \"Gbit/s\""));
  CHECK(has(rate_error("1Gbit/s"), "Gbps"));
  CHECK(has(rate_error("1GBPS"), "unknown bandwidth unit"));
  CHECK(has(time_error("1sec"), "unknown time unit \"sec\""));
  CHECK(has(time_error("1sec"), "expected ps, ns, us"));
  CHECK(has(time_error("1S"), "unknown time unit \"S\""));
  CHECK(has(time_error("1Ms"), "unknown time unit"));
}

TEST_CASE("parsers: lowercase m is milli, never mega") {
  const std::string mb = size_error("25mb");
  CHECK(has(mb, "\"mb\""));
  CHECK(has(mb, "not megabits"));
  CHECK(has(mb, "Mb"));
  CHECK(has(mb, "MB"));
  CHECK(has(size_error("25mB"), "not megabytes"));
  CHECK(has(rate_error("100mbps"), "not megabits"));
  CHECK(has(rate_error("100mbps"), "Mbps"));
  CHECK(has(rate_error("100mB/s"), "MB/s"));
  CHECK(has(rate_error("100mb/s"), "milli"));
  // For times "m" alone is ambiguous between minutes and milliseconds.
  CHECK(has(time_error("5m"), "min"));
  CHECK(has(time_error("5m"), "ms"));
}

TEST_CASE("parsers: prefixes are case-sensitive, with a suggestion") {
  CHECK(has(size_error("1gb"), "did you mean Gb"));
  CHECK(has(rate_error("1gbps"), "did you mean Gbps"));
  CHECK(has(size_error("1kiB"), "did you mean KiB"));
}

TEST_CASE("parsers: a unit of another family says which family it is") {
  CHECK(has(size_error("400Gbps"), "\"400Gbps\" is a bandwidth, not a size"));
  CHECK(has(size_error("50GB/s"), "is a bandwidth, not a size"));
  CHECK(has(size_error("1us"), "is a time, not a size"));
  CHECK(has(rate_error("25MB"), "\"25MB\" is a size, not a bandwidth"));
  CHECK(has(rate_error("25MB"), "400Gbps"));
  CHECK(has(rate_error("1ms"), "is a time, not a bandwidth"));
  CHECK(has(time_error("25MB"), "is a size, not a time"));
  CHECK(has(time_error("10Gbps"), "is a bandwidth, not a time"));
  // "1b" is one bit, a size: a time parser must not read it as anything else.
  CHECK(has(time_error("1b"), "is a size, not a time"));
}

TEST_CASE("parsers: negative, NaN and infinite values are rejected") {
  CHECK(has(size_error("-1GB"), "size \"-1GB\" is negative"));
  CHECK(has(rate_error("-400Gbps"), "is negative"));
  CHECK(has(time_error("-1us"), "is negative"));
  CHECK(has(time_error("-0"), "is negative"));
  CHECK(has(size_error("nanGB"), "not a finite number"));
  CHECK(has(size_error("nan"), "not a finite number"));
  CHECK(has(rate_error("infGbps"), "not a finite number"));
  CHECK(has(time_error("inf s"), "not a finite number"));
  CHECK(has(time_error("infinity"), "not a finite number"));
}

TEST_CASE("parsers: empty input and missing numbers are rejected") {
  CHECK(has(size_error(""), "empty size"));
  CHECK(has(rate_error("   "), "empty bandwidth"));
  CHECK(has(time_error(""), "empty time"));
  CHECK(has(size_error("GB"), "does not start with a number"));
  CHECK(has(rate_error("Gbps"), "does not start with a number"));
  CHECK(has(time_error("us"), "does not start with a number"));
  CHECK(has(size_error("+5GB"), "does not start with a number"));
  CHECK(has(size_error("e9B"), "does not start with a number"));
}

TEST_CASE("parsers: trailing junk and malformed numbers are rejected") {
  CHECK(has(size_error("25MB x"), "unexpected \"x\" after the unit"));
  CHECK(has(rate_error("400Gbps per port"), "unexpected \"per port\""));
  CHECK(has(time_error("1us 2us"), "unexpected \"2us\""));
  CHECK(has(size_error("1.2.3GB"), "malformed number"));
  CHECK(has(size_error("1 000 GB"), "malformed number"));
  CHECK(has(size_error("1,5GB"), "decimal point"));
  CHECK(has(size_error("0x10B"), "unknown size unit"));
  CHECK(has(rate_error("400Gbps!"), "unknown bandwidth unit \"Gbps!\""));
  CHECK(has(time_error("1.5us;"), "unknown time unit"));
}

TEST_CASE("parsers: overflow is rejected, not turned into infinity") {
  CHECK(has(size_error("1e400B"), "out of range"));
  CHECK(has(time_error("1e-400s"), "out of range"));
  CHECK(has(size_error("1e300PB"), "too large"));
  CHECK(has(rate_error("1e300Pbps"), "too large"));
  CHECK(has(time_error("1e306h"), "too large"));
  CHECK(parse_size("1e300B").bytes() == 1e300);  // large but representable is fine
}

TEST_CASE("parsers: every rejection is a UnitError") {
  for (std::string_view bad : {"", "400", "25MBs", "25mb", "-1B", "nanB", "1e400B", "25MB x",
                               "50GB/s", "1us"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_size(bad), UnitError);
  }
  for (std::string_view bad : {"", "400", "25MB", "100mbps", "-1Gbps", "infGbps", "1Gbps x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_rate(bad), UnitError);
  }
  for (std::string_view bad : {"", "1", "5m", "25MB", "-1s", "nan s", "1 s s"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_time(bad), UnitError);
  }
}

// --- formatting -----------------------------------------------------------------------------

TEST_CASE("format_size: binary prefixes, up to 4 significant digits") {
  CHECK(format_size(Bytes(0)) == "0 B");
  CHECK(format_size(Bytes(1)) == "1 B");
  CHECK(format_size(Bytes(512)) == "512 B");
  CHECK(format_size(Bytes(1536)) == "1.5 KiB");
  CHECK(format_size(Bytes(25.0 * 1048576.0)) == "25 MiB");
  CHECK(format_size(Bytes(1073741824.0)) == "1 GiB");
  CHECK(format_size(Bytes(123456789)) == "117.7 MiB");
  CHECK(format_size(Bytes(1125899906842624.0 * 3)) == "3 PiB");
  CHECK(format_size(Bytes(0.5)) == "0.5 B");
  // Rounds into the next unit rather than printing "1024 MiB".
  CHECK(format_size(Bytes(1073741824.0 - 1.0)) == "1 GiB");
}

TEST_CASE("format_rate and format_rate_bits: decimal units") {
  CHECK(format_rate(BytesPerSecond(50e9)) == "50 GB/s");
  CHECK(format_rate(BytesPerSecond(450e9)) == "450 GB/s");
  CHECK(format_rate(BytesPerSecond(1.25e6)) == "1.25 MB/s");
  CHECK(format_rate(BytesPerSecond(0)) == "0 B/s");
  CHECK(format_rate(BytesPerSecond(1500)) == "1.5 kB/s");
  CHECK(format_rate_bits(BytesPerSecond(50e9)) == "400 Gbps");
  CHECK(format_rate_bits(BytesPerSecond(12.5e9)) == "100 Gbps");
  CHECK(format_rate_bits(BytesPerSecond(1.25e6)) == "10 Mbps");
  CHECK(format_rate_bits(BytesPerSecond(0)) == "0 bps");
  CHECK(format_rate_bits(BytesPerSecond(1)) == "8 bps");
}

TEST_CASE("format_time: from picoseconds to hours") {
  CHECK(format_time(Seconds(0)) == "0 s");
  CHECK(format_time(Seconds(1.5e-6)) == "1.5 us");
  CHECK(format_time(Seconds(0.012)) == "12 ms");
  CHECK(format_time(Seconds(300e-9)) == "300 ns");
  CHECK(format_time(Seconds(5e-12)) == "5 ps");
  CHECK(format_time(Seconds(2.5)) == "2.5 s");
  CHECK(format_time(Seconds(90)) == "1.5 min");
  CHECK(format_time(Seconds(7200)) == "2 h");
  CHECK(format_time(Seconds(0.9999999)) == "1 s");
  CHECK(format_time(Seconds(1.23456e-3)) == "1.235 ms");
}

TEST_CASE("format_percent: a share as a whole percentage") {
  CHECK(format_percent(0.0) == "0 %");
  CHECK(format_percent(0.4567) == "46 %");
  CHECK(format_percent(1.0) == "100 %");
  CHECK(format_percent(1.034) == "103 %");  // above 100 %: a scaling efficiency can be
}

TEST_CASE("formatters: negative values keep their sign") {
  CHECK(format_size(Bytes(-2048)) == "-2 KiB");
  CHECK(format_time(Seconds(-0.012)) == "-12 ms");
}

TEST_CASE("formatters round-trip through the parsers within 1e-3") {
  // Log-spaced values over the whole range users meet, including awkward mantissas.
  for (double exponent = -12.0; exponent <= 16.0; exponent += 0.173) {
    const double value = 1.2345 * std::pow(10.0, exponent);
    CAPTURE(value);
    const std::string size = format_size(Bytes(value));
    const std::string rate = format_rate(BytesPerSecond(value));
    const std::string bits = format_rate_bits(BytesPerSecond(value));
    const std::string time = format_time(Seconds(value));
    CAPTURE(size);
    CAPTURE(rate);
    CAPTURE(bits);
    CAPTURE(time);
    CHECK(parse_size(size).bytes() == doctest::Approx(value).epsilon(1e-3));
    CHECK(parse_rate(rate).bytes_per_second() == doctest::Approx(value).epsilon(1e-3));
    CHECK(parse_rate(bits).bytes_per_second() == doctest::Approx(value).epsilon(1e-3));
    CHECK(parse_time(time).seconds() == doctest::Approx(value).epsilon(1e-3));
  }
  CHECK(parse_size(format_size(Bytes(0))).bytes() == 0.0);
  CHECK(parse_rate(format_rate_bits(parse_rate("400Gbps"))) == parse_rate("400Gbps"));
  CHECK(parse_size(format_size(parse_size("25MiB"))) == parse_size("25MiB"));
  CHECK(parse_time(format_time(parse_time("1.5us"))) == parse_time("1.5us"));
}

// --- dimensions and literals ----------------------------------------------------------------

TEST_CASE("dimension arithmetic keeps types straight") {
  using namespace gradsync::literals;
  static_assert(std::is_same_v<decltype(Bytes() / BytesPerSecond()), Seconds>);
  static_assert(std::is_same_v<decltype(BytesPerSecond() * Seconds()), Bytes>);
  static_assert(std::is_same_v<decltype(Seconds() * BytesPerSecond()), Bytes>);
  static_assert(std::is_same_v<decltype(Bytes() / Seconds()), BytesPerSecond>);
  static_assert(std::is_same_v<decltype(Bytes() / Bytes()), double>);
  static_assert(std::is_same_v<decltype(Seconds() / Seconds()), double>);
  static_assert(std::is_same_v<decltype(BytesPerSecond() / BytesPerSecond()), double>);
  // Strong types: no implicit conversion from double or between dimensions.
  static_assert(!std::is_convertible_v<double, Bytes>);
  static_assert(!std::is_convertible_v<Bytes, Seconds>);
  static_assert(!std::is_convertible_v<Seconds, BytesPerSecond>);
  // Usable at compile time.
  static_assert((1_GB / 50_GBps).seconds() == 0.02);

  CHECK((1_GB / 50_GBps).seconds() == doctest::Approx(0.02));
  CHECK((50_GBps * 2_s).bytes() == 100e9);
  CHECK((2_s * 50_GBps).bytes() == 100e9);
  CHECK((1_GB / 2_s).bytes_per_second() == 5e8);
  CHECK(1_GiB / 1_MiB == 1024.0);
  CHECK(2_ms / 1_ms == 2.0);
  CHECK(400_Gbps / 100_Gbps == 4.0);

  CHECK((1_KiB + 1_KiB) == 2_KiB);
  CHECK((3_KiB - 1_KiB) == 2_KiB);
  CHECK((1_KiB * 2.0) == 2_KiB);
  CHECK((2.0 * 1_KiB) == 2_KiB);
  CHECK((2_KiB / 2.0) == 1_KiB);
  CHECK((1_ms + 1_ms) == 2_ms);
  CHECK((3_ms - 1_ms).seconds() == doctest::Approx(2e-3));
  CHECK((1_ms * 3.0).seconds() == doctest::Approx(3e-3));
  CHECK((3.0 * 1_ms).seconds() == doctest::Approx(3e-3));
  CHECK((4_ms / 2.0) == 2_ms);
  CHECK((50_GBps + 50_GBps) == 100_GBps);
  CHECK((50_GBps * 2.0) == 100_GBps);
  CHECK((2.0 * 50_GBps) == 100_GBps);
  CHECK((100_GBps / 2.0) == 50_GBps);

  Bytes total;
  total += 1_MiB;
  total += 1_MiB;
  total -= 1_MiB;
  CHECK(total == 1_MiB);
  Seconds elapsed;
  elapsed += 5_us;
  elapsed -= 2_us;
  CHECK(elapsed.microseconds() == doctest::Approx(3.0));
  BytesPerSecond sum;
  sum += 25_GBps;
  CHECK(sum == 25_GBps);

  // The estimate bytes / bandwidth + latency: 14 GB over a 50 GB/s link plus 1 us.
  const Seconds t = 14_GB / 50_GBps + 1_us;
  CHECK(t.seconds() == doctest::Approx(0.280001));
}

TEST_CASE("literals agree with the parsers") {
  using namespace gradsync::literals;
  CHECK(1024_B == parse_size("1KiB"));
  CHECK(1_KiB == parse_size("1KiB"));
  CHECK(25_MiB == parse_size("25MiB"));
  CHECK(1_GiB == parse_size("1GiB"));
  CHECK(1_KB == parse_size("1KB"));
  CHECK(25_MB == parse_size("25MB"));
  CHECK(14_GB == parse_size("14GB"));
  CHECK(2_s == parse_time("2s"));
  CHECK((1.5_s).seconds() == 1.5);
  CHECK((12_ms).seconds() == doctest::Approx(parse_time("12ms").seconds()));
  CHECK((1_us).seconds() == doctest::Approx(parse_time("1us").seconds()));
  CHECK((1.5_us).seconds() == doctest::Approx(parse_time("1.5us").seconds()));
  CHECK((500_ns).seconds() == doctest::Approx(parse_time("500ns").seconds()));
  CHECK(50_GBps == parse_rate("50GB/s"));
  CHECK((1.5_GBps).bytes_per_second() == 1.5e9);
  CHECK(400_Gbps == parse_rate("400Gbps"));
  CHECK(400_Gbps == 50_GBps);
  CHECK((400_Gbps).bits_per_second() == 400e9);
  CHECK((1_B).bits() == 8.0);
}

// --- ConfigError ----------------------------------------------------------------------------

TEST_CASE("SourceMark prints file:line:col, dropping unknown parts") {
  CHECK(SourceMark{"topo.yaml", 12, 5}.to_string() == "topo.yaml:12:5");
  CHECK(SourceMark{"topo.yaml", 12, 0}.to_string() == "topo.yaml:12");
  CHECK(SourceMark{"topo.yaml", 0, 0}.to_string() == "topo.yaml");
  CHECK(SourceMark{"topo.yaml", 0, 7}.to_string() == "topo.yaml");
  CHECK(SourceMark{"dir/a b.yaml", 1, 1}.to_string() == "dir/a b.yaml:1:1");
}

TEST_CASE("ConfigError reads like a compiler diagnostic") {
  const ConfigError error(SourceMark{"topo.yaml", 12, 5},
                          "bandwidth \"400\" has no unit (write e.g. 400Gbps or 50GB/s)");
  CHECK(std::string(error.what()) ==
        "topo.yaml:12:5: error: bandwidth \"400\" has no unit (write e.g. 400Gbps or 50GB/s)");
  CHECK(error.where().file == "topo.yaml");
  CHECK(error.where().line == 12);
  CHECK(error.where().column == 5);
  CHECK(error.reason() == "bandwidth \"400\" has no unit (write e.g. 400Gbps or 50GB/s)");

  CHECK(std::string(ConfigError(SourceMark{"missing.yaml"}, "cannot open file").what()) ==
        "missing.yaml: error: cannot open file");
  CHECK(std::string(ConfigError(SourceMark{"t.yaml", 3}, "x").what()) == "t.yaml:3: error: x");
}

TEST_CASE("ConfigError is a std::runtime_error, catchable as such") {
  CHECK_THROWS_WITH_AS(throw ConfigError(SourceMark{"s.yaml", 2, 1}, "unknown key \"nodez\""),
                       "s.yaml:2:1: error: unknown key \"nodez\"", std::runtime_error);
  CHECK_THROWS_AS(throw ConfigError(SourceMark{"s.yaml", 2, 1}, "x"), ConfigError);
}

TEST_CASE("errors: control characters escaped, long tokens cut, the line bounded") {
  using gradsync::printable;
  using gradsync::ConfigError;
  using gradsync::SourceMark;
  // An ANSI escape from an input cannot reach the terminal.
  CHECK(printable("name \x1b[31mred\x1b[0m") == "name \\x1b[31mred\\x1b[0m");
  CHECK(printable("a\nb\tc") == "a\\nb\\tc");
  // A token of 10^6 characters becomes 79 and an ellipsis; short tokens stay whole.
  const std::string huge(1'000'000, 'x');
  const std::string cut = printable("bad token " + huge + " here");
  CHECK(cut == "bad token " + std::string(79, 'x') + "… here");
  // UTF-8 characters are never split.
  const std::string arrows(60, 'a');
  const std::string mixed = printable(arrows + std::string(30, 'a') + "→→→");
  CHECK(mixed.find("\xe2\x86") == std::string::npos);  // cut before the arrows, whole or none
  // Many tokens: at most 2000 bytes (and an ellipsis).
  std::string words;
  for (int i = 0; i < 100000; ++i) words += "word ";
  CHECK(printable(words).size() <= 2000 + 8);
  const ConfigError e(SourceMark{"f.yaml", 1, 2}, "unknown key '\x1b[2J" + huge + "'");
  CHECK(std::string(e.what()).size() < 200);
  CHECK(std::string(e.what()).find('\x1b') == std::string::npos);
}

TEST_CASE("memory budget: the kernel's files are read in bytes") {
  using namespace gradsync;
  const std::string meminfo =
      "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n";
  CHECK(meminfo_available(meminfo) == std::uint64_t{20000000} * 1024);
  CHECK_FALSE(meminfo_available("MemTotal: 1 kB\n").has_value());
  // A longer field whose name starts with the one asked for is not it.
  CHECK(status_kib_field("VmSizeX:  7 kB\nVmSize:\t  123456 kB\nVmRSS:  42 kB\n", "VmSize") ==
        std::uint64_t{123456} * 1024);
  CHECK(status_kib_field("VmRSS:  42 kB", "VmRSS") == std::uint64_t{42} * 1024);
  CHECK(cgroup_bytes("8589934592\n") == std::uint64_t{8589934592});
  CHECK_FALSE(cgroup_bytes("max\n").has_value());  // no limit
  CHECK_FALSE(cgroup_bytes("").has_value());        // no file
}

TEST_CASE("memory budget: estimates under the budget pass, over it name both figures") {
  using namespace gradsync;
  require_memory(1e6, "a small plan", "nothing to do");  // under 64 MB: never refused
  const auto budget = memory_budget();
  REQUIRE(budget.has_value());  // Linux always has /proc/meminfo
  CHECK(budget->bytes > 0);
  try {
    require_memory(static_cast<double>(budget->bytes) * 4 + 1e12, "an absurd plan", "less");
    FAIL("an estimate of 4x the budget + 1 TB passed");
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("gradsync: error: an absurd plan needs about ", 0) == 0);
    CHECK(what.find("of memory, more than the ") != std::string::npos);
    CHECK(what.find(budget->source) != std::string::npos);
    CHECK(what.find(": less") != std::string::npos);
  }
}

TEST_CASE("memory budget: the cgroups whose limits apply, innermost first") {
  using namespace gradsync;
  // cgroup v2, a Slurm step below its job: the step, the job, ..., the root.
  const auto v2 = cgroup_memory_dirs("0::/system.slice/slurmstepd.scope/job_7/step_0\n");
  REQUIRE(v2.size() == 5);
  CHECK(v2[0].path == "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0");
  CHECK(v2[1].path == "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7");
  CHECK(v2[4].path == "/sys/fs/cgroup");
  CHECK(v2[0].v2);
  // A container that sees its group as the root.
  const auto root = cgroup_memory_dirs("0::/\n");
  REQUIRE(root.size() == 1);
  CHECK(root[0].path == "/sys/fs/cgroup");
  // cgroup v1: the memory controller's line (joined controllers too).
  const auto v1 = cgroup_memory_dirs("5:devices:/\n4:cpu,memory:/docker/abc\n1:cpuacct:/\n");
  REQUIRE(v1.size() == 3);
  CHECK(v1[0].path == "/sys/fs/cgroup/memory/docker/abc");
  CHECK(v1[2].path == "/sys/fs/cgroup/memory");
  CHECK_FALSE(v1[0].v2);
  // A hybrid host (memory on v1, the unified "0::" line too): v1's group.
  const auto hybrid = cgroup_memory_dirs("4:memory:/process_api/d47\n0::/\n");
  REQUIRE(hybrid.size() == 3);
  CHECK(hybrid[0].path == "/sys/fs/cgroup/memory/process_api/d47");
  CHECK_FALSE(hybrid[0].v2);
  CHECK(cgroup_memory_dirs("").empty());
  CHECK(cgroup_memory_dirs("3:cpu:/x\n").empty());
}
