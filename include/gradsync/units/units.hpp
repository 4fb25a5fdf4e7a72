// Units live in types: Bytes, Seconds and BytesPerSecond are distinct strong types, so a
// bandwidth can never be passed where a latency is expected. Values are parsed from strings
// such as "25MiB", "400Gbps", "50GB/s", "1.5us" (see parse_size / parse_rate / parse_time).
//
// Conventions (README.md, Units): `b` is bits and `B` bytes; SI prefixes k/K, M, G, T, P are
// decimal (1e3, 1e6, ...); Ki, Mi, Gi, Ti, Pi are binary (2^10, 2^20, ...). A size, bandwidth
// or time written without a unit is an error, except the literal 0.
#pragma once

#include <compare>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gradsync {

// Thrown by the parsers below. It carries no file position: the config layer, which knows
// where the string came from, turns it into a ConfigError with file:line:col.
struct UnitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A quantity of data. Stored as a double number of bytes: gradient sizes are products of
// parameter counts and compression ratios, and need not be whole.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(double bytes) : bytes_(bytes) {}
  [[nodiscard]] constexpr double bytes() const { return bytes_; }
  [[nodiscard]] constexpr double bits() const { return bytes_ * 8.0; }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes& operator+=(Bytes o) { bytes_ += o.bytes_; return *this; }
  constexpr Bytes& operator-=(Bytes o) { bytes_ -= o.bytes_; return *this; }

 private:
  double bytes_ = 0.0;
};

// A duration or a point in simulated time.
class Seconds {
 public:
  constexpr Seconds() = default;
  constexpr explicit Seconds(double seconds) : seconds_(seconds) {}
  [[nodiscard]] constexpr double seconds() const { return seconds_; }
  [[nodiscard]] constexpr double microseconds() const { return seconds_ * 1e6; }
  constexpr auto operator<=>(const Seconds&) const = default;
  constexpr Seconds& operator+=(Seconds o) { seconds_ += o.seconds_; return *this; }
  constexpr Seconds& operator-=(Seconds o) { seconds_ -= o.seconds_; return *this; }

 private:
  double seconds_ = 0.0;
};

// A data rate. GB/s means 1e9 bytes per second (the nccl-tests convention).
class BytesPerSecond {
 public:
  constexpr BytesPerSecond() = default;
  constexpr explicit BytesPerSecond(double bytes_per_second) : bps_(bytes_per_second) {}
  [[nodiscard]] constexpr double bytes_per_second() const { return bps_; }
  [[nodiscard]] constexpr double bits_per_second() const { return bps_ * 8.0; }
  [[nodiscard]] constexpr double gigabytes_per_second() const { return bps_ / 1e9; }
  constexpr auto operator<=>(const BytesPerSecond&) const = default;
  constexpr BytesPerSecond& operator+=(BytesPerSecond o) { bps_ += o.bps_; return *this; }

 private:
  double bps_ = 0.0;
};

// Arithmetic that keeps dimensions straight.
constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes(a.bytes() + b.bytes()); }
constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes(a.bytes() - b.bytes()); }
constexpr Bytes operator*(Bytes a, double k) { return Bytes(a.bytes() * k); }
constexpr Bytes operator*(double k, Bytes a) { return Bytes(a.bytes() * k); }
constexpr Bytes operator/(Bytes a, double k) { return Bytes(a.bytes() / k); }
constexpr double operator/(Bytes a, Bytes b) { return a.bytes() / b.bytes(); }

constexpr Seconds operator+(Seconds a, Seconds b) { return Seconds(a.seconds() + b.seconds()); }
constexpr Seconds operator-(Seconds a, Seconds b) { return Seconds(a.seconds() - b.seconds()); }
constexpr Seconds operator*(Seconds a, double k) { return Seconds(a.seconds() * k); }
constexpr Seconds operator*(double k, Seconds a) { return Seconds(a.seconds() * k); }
constexpr Seconds operator/(Seconds a, double k) { return Seconds(a.seconds() / k); }
constexpr double operator/(Seconds a, Seconds b) { return a.seconds() / b.seconds(); }

constexpr BytesPerSecond operator+(BytesPerSecond a, BytesPerSecond b) {
  return BytesPerSecond(a.bytes_per_second() + b.bytes_per_second());
}
constexpr BytesPerSecond operator*(BytesPerSecond a, double k) {
  return BytesPerSecond(a.bytes_per_second() * k);
}
constexpr BytesPerSecond operator*(double k, BytesPerSecond a) {
  return BytesPerSecond(a.bytes_per_second() * k);
}
constexpr BytesPerSecond operator/(BytesPerSecond a, double k) {
  return BytesPerSecond(a.bytes_per_second() / k);
}
constexpr double operator/(BytesPerSecond a, BytesPerSecond b) {
  return a.bytes_per_second() / b.bytes_per_second();
}

// bytes / rate = time; rate * time = bytes; bytes / time = rate.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) {
  return Seconds(b.bytes() / r.bytes_per_second());
}
constexpr Bytes operator*(BytesPerSecond r, Seconds t) {
  return Bytes(r.bytes_per_second() * t.seconds());
}
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return r * t; }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) {
  return BytesPerSecond(b.bytes() / t.seconds());
}

// Parsers. Accepted forms: a decimal number (with optional exponent, e.g. 1.5, 7e9), optional
// spaces, then a unit. Negative, NaN or infinite values are rejected.
//   sizes: b, B with prefixes k K M G T P Ki Mi Gi Ti Pi   ("8b" is one byte)
//   rates: bps, b/s, Bps, B/s with the same prefixes        ("400Gbps", "50GB/s", "25GiB/s")
//   times: ps, ns, us, µs, ms, s, min, h
[[nodiscard]] Bytes parse_size(std::string_view text);
[[nodiscard]] BytesPerSecond parse_rate(std::string_view text);
[[nodiscard]] Seconds parse_time(std::string_view text);
// A parameter count: a number with an optional exponent and an optional decimal suffix for
// counts, K (1e3), M (1e6), B (1e9) or T (1e12), either case: "7e9", "7B", "7b", "1.5T",
// "350M". Throws UnitError for anything else (negative, not finite, unknown suffix).
[[nodiscard]] double parse_param_count(std::string_view text);

// Human-readable formatting with a unit: "25 MiB" style for sizes (binary prefixes),
// "400 Gbps"/"50 GB/s" for rates, "1.5 us" for times. Round-trip through the parsers.
[[nodiscard]] std::string format_size(Bytes b);
[[nodiscard]] std::string format_rate(BytesPerSecond r);       // GB/s (decimal bytes)
[[nodiscard]] std::string format_rate_bits(BytesPerSecond r);  // Gbps (decimal bits)
[[nodiscard]] std::string format_time(Seconds t);
// A share as a whole percentage: 0.4567 -> "46 %".
[[nodiscard]] std::string format_percent(double share);

namespace literals {
constexpr Bytes operator""_B(unsigned long long v) { return Bytes(static_cast<double>(v)); }
constexpr Bytes operator""_KiB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1024.0); }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1048576.0); }
constexpr Bytes operator""_GiB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1073741824.0); }
constexpr Bytes operator""_KB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1e3); }
constexpr Bytes operator""_MB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1e6); }
constexpr Bytes operator""_GB(unsigned long long v) { return Bytes(static_cast<double>(v) * 1e9); }
constexpr Seconds operator""_s(long double v) { return Seconds(static_cast<double>(v)); }
constexpr Seconds operator""_s(unsigned long long v) { return Seconds(static_cast<double>(v)); }
constexpr Seconds operator""_ms(unsigned long long v) { return Seconds(static_cast<double>(v) * 1e-3); }
constexpr Seconds operator""_us(unsigned long long v) { return Seconds(static_cast<double>(v) * 1e-6); }
constexpr Seconds operator""_us(long double v) { return Seconds(static_cast<double>(v) * 1e-6); }
constexpr Seconds operator""_ns(unsigned long long v) { return Seconds(static_cast<double>(v) * 1e-9); }
constexpr BytesPerSecond operator""_GBps(unsigned long long v) { return BytesPerSecond(static_cast<double>(v) * 1e9); }
constexpr BytesPerSecond operator""_GBps(long double v) { return BytesPerSecond(static_cast<double>(v) * 1e9); }
constexpr BytesPerSecond operator""_Gbps(unsigned long long v) { return BytesPerSecond(static_cast<double>(v) * 1e9 / 8.0); }
}  // namespace literals

}  // namespace gradsync
