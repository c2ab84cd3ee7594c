#pragma once

/// @file
/// Ledger: live bytes and handle counts per label, so a report can name the owner of every byte.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace afem::memory {

/// One label's line in a Ledger. Its address is stable for the Ledger's lifetime, so handles
/// keep a pointer to it instead of looking the label up again on release.
struct LedgerEntry {
  std::string label;
  std::size_t live_bytes = 0;  ///< bytes held now (as reserved by the source, alignment included)
  std::size_t live_count = 0;  ///< handles holding memory now
  std::size_t peak_bytes = 0;  ///< the most live_bytes ever reached
  std::uint64_t borrows = 0;   ///< handles ever handed out under this label
};

/// A copy of a Ledger's lines at one moment, sorted by live bytes (largest first, then label).
struct LedgerSnapshot {
  std::string owner;  ///< name of the Pool or Arena the ledger belongs to
  std::vector<LedgerEntry> entries;

  /// Sum of live bytes over all labels.
  [[nodiscard]] std::size_t live_bytes() const;
  /// The line of `label`, or nullptr when the label never borrowed.
  [[nodiscard]] const LedgerEntry* find(std::string_view label) const;
  /// A fixed-width text table: label, live bytes, live handles, peak bytes, borrows.
  [[nodiscard]] std::string table() const;
  /// The same as one JSON object: {"owner": ..., "live_bytes": ..., "entries": [...]}.
  [[nodiscard]] std::string json() const;
};

/// Live bytes and counts per label. Not synchronised: its owner (a Pool under its mutex, an Arena
/// on its one thread) serialises access. Allocates only when a label is seen for the first time.
class Ledger {
public:
  Ledger() = default;
  Ledger(const Ledger&) = delete;  // handles point at its entries
  Ledger& operator=(const Ledger&) = delete;
  Ledger(Ledger&&) = delete;
  Ledger& operator=(Ledger&&) = delete;
  ~Ledger() = default;

  /// The entry for `label`, created empty on first use.
  [[nodiscard]] LedgerEntry& entry(std::string_view label);

  /// The entry for `label`, or nullptr when it never borrowed; never allocates.
  [[nodiscard]] LedgerEntry* find(std::string_view label) noexcept;

  static void add(LedgerEntry& entry, std::size_t bytes) noexcept;
  static void remove(LedgerEntry& entry, std::size_t bytes) noexcept;

  /// Zeroes every entry's live bytes and counts (an Arena reset); peaks and borrows stay.
  void clear_live() noexcept;

  /// A sorted copy of every entry that has ever borrowed (a label whose requests all failed is
  /// left out).
  [[nodiscard]] LedgerSnapshot snapshot(std::string owner) const;

private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };
  /// Slot of the small cache of recently used entries, keyed by where the label's text lives
  /// (labels are mostly literals) and checked against the text itself.
  static std::size_t recent_slot(std::string_view label) noexcept {
    return ((reinterpret_cast<std::uintptr_t>(label.data()) >> 3U) ^ label.size()) % recent_slots;
  }

  static constexpr std::size_t recent_slots = 16;
  std::unordered_map<std::string, LedgerEntry, Hash, std::equal_to<>> entries_;
  std::array<LedgerEntry*, recent_slots> recent_{};
};

/// Formats a byte count for people: "512 B", "3.00 KiB", "1.50 MiB", "2.00 GiB".
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace afem::memory
