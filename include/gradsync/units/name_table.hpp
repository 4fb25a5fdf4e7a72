// Lookups in an enum's table of spellings, a constexpr std::array of (value, name) pairs (or
// (name, value) pairs): the one place to_string, *_from_string and the *_names() choice lists
// of the loaders and the CLI come from, so a value is one row of its table.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsync {

template <typename Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

// The spelling of `v`; "?" for a value the table lacks.
template <typename Enum, std::size_t N>
[[nodiscard]] std::string_view name_in(const NameTable<Enum, N>& table, Enum v) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return "?";
}

template <typename Enum, std::size_t N>
[[nodiscard]] std::optional<Enum> value_in(const NameTable<Enum, N>& table, std::string_view text) {
  for (const auto& [value, name] : table)
    if (name == text) return value;
  return std::nullopt;
}

// Every spelling, in the table's order; with `keep`, of the values it keeps.
template <typename Enum, std::size_t N>
[[nodiscard]] std::vector<std::string> names_in(const NameTable<Enum, N>& table,
                                                bool (*keep)(Enum) = nullptr) {
  std::vector<std::string> out;
  for (const auto& [value, name] : table)
    if (keep == nullptr || keep(value)) out.emplace_back(name);
  return out;
}

// The same for tables written name first.
template <typename Enum, std::size_t N>
[[nodiscard]] std::string_view name_in(const std::array<std::pair<std::string_view, Enum>, N>& table,
                                       Enum v) {
  for (const auto& [name, value] : table)
    if (value == v) return name;
  return "?";
}

template <typename Enum, std::size_t N>
[[nodiscard]] std::optional<Enum> value_in(
    const std::array<std::pair<std::string_view, Enum>, N>& table, std::string_view text) {
  for (const auto& [name, value] : table)
    if (name == text) return value;
  return std::nullopt;
}

template <typename Enum, std::size_t N>
[[nodiscard]] std::vector<std::string> names_in(
    const std::array<std::pair<std::string_view, Enum>, N>& table) {
  std::vector<std::string> out;
  for (const auto& [name, value] : table) out.emplace_back(name);
  return out;
}

}  // namespace gradsync
