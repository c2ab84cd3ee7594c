#include "arenafem/memory/ledger.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "arenafem/memory/error.hpp"

namespace afem::memory {

LedgerEntry& Ledger::entry(std::string_view label) {
  LedgerEntry*& recent = recent_[recent_slot(label)];
  if (recent != nullptr && recent->label == label) {
    return *recent;
  }
  auto found = entries_.find(label);
  if (found == entries_.end()) {
    found = entries_.emplace(std::string(label), LedgerEntry{}).first;
    found->second.label = found->first;
  }
  recent = &found->second;
  return found->second;
}

LedgerEntry* Ledger::find(std::string_view label) noexcept {
  LedgerEntry* recent = recent_[recent_slot(label)];
  if (recent != nullptr && recent->label == label) {
    return recent;
  }
  const auto found = entries_.find(label);
  return found == entries_.end() ? nullptr : &found->second;
}

void Ledger::add(LedgerEntry& entry, std::size_t bytes) noexcept {
  entry.live_bytes += bytes;
  entry.live_count += 1;
  entry.borrows += 1;
  entry.peak_bytes = std::max(entry.peak_bytes, entry.live_bytes);
}

void Ledger::remove(LedgerEntry& entry, std::size_t bytes) noexcept {
  AFEM_ASSERT(entry.live_bytes >= bytes && entry.live_count > 0,
              "Ledger: more given back under a label than it holds");
  entry.live_bytes -= bytes;
  entry.live_count -= 1;
}

void Ledger::clear_live() noexcept {
  for (auto& [label, entry] : entries_) {
    entry.live_bytes = 0;
    entry.live_count = 0;
  }
}

LedgerSnapshot Ledger::snapshot(std::string owner) const {
  LedgerSnapshot result{std::move(owner), {}};
  result.entries.reserve(entries_.size());
  for (const auto& [label, entry] : entries_) {
    if (entry.borrows > 0) {  // a label whose only request failed never held anything
      result.entries.push_back(entry);
    }
  }
  std::sort(result.entries.begin(), result.entries.end(),
            [](const LedgerEntry& a, const LedgerEntry& b) {
              return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.label < b.label;
            });
  return result;
}

std::size_t LedgerSnapshot::live_bytes() const {
  std::size_t total = 0;
  for (const auto& entry : entries) {
    total += entry.live_bytes;
  }
  return total;
}

const LedgerEntry* LedgerSnapshot::find(std::string_view label) const {
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [&](const LedgerEntry& entry) { return entry.label == label; });
  return found == entries.end() ? nullptr : &*found;
}

std::string LedgerSnapshot::table() const {
  std::size_t width = std::string_view("label").size();
  for (const auto& entry : entries) {
    width = std::max(width, entry.label.size());
  }
  std::string out = "memory held in " + owner + "\n";
  std::array<char, 512> line{};
  const int label_width = static_cast<int>(width);
  std::snprintf(line.data(), line.size(), "  %-*s %12s %8s %12s %10s\n", label_width, "label",
                "live", "handles", "peak", "borrows");
  out += line.data();
  for (const auto& entry : entries) {
    std::snprintf(line.data(), line.size(), "  %-*s %12s %8zu %12s %10llu\n", label_width,
                  entry.label.c_str(), format_bytes(entry.live_bytes).c_str(), entry.live_count,
                  format_bytes(entry.peak_bytes).c_str(),
                  static_cast<unsigned long long>(entry.borrows));
    out += line.data();
  }
  std::snprintf(line.data(), line.size(), "  %-*s %12s\n", label_width, "total",
                format_bytes(live_bytes()).c_str());
  out += line.data();
  return out;
}

namespace {
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          std::array<char, 8> escaped{};
          std::snprintf(escaped.data(), escaped.size(), "\\u%04x", static_cast<unsigned>(c));
          out += escaped.data();
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}
}  // namespace

std::string LedgerSnapshot::json() const {
  std::string out = "{\"owner\":" + json_string(owner) +
                    ",\"live_bytes\":" + std::to_string(live_bytes()) + ",\"entries\":[";
  bool first = true;
  for (const auto& entry : entries) {
    out += first ? "" : ",";
    first = false;
    out += "{\"label\":" + json_string(entry.label) +
           ",\"live_bytes\":" + std::to_string(entry.live_bytes) +
           ",\"live_count\":" + std::to_string(entry.live_count) +
           ",\"peak_bytes\":" + std::to_string(entry.peak_bytes) +
           ",\"borrows\":" + std::to_string(entry.borrows) + "}";
  }
  return out + "]}";
}

std::string format_bytes(std::size_t bytes) {
  constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < units.size()) {
    value /= 1024.0;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.2f %s", value, units[unit]);
  return text.data();
}

}  // namespace afem::memory
