#pragma once

/// @file
/// CaptureCache<Key>: steps captured once per key and replayed afterwards (a CUDA graph on a GPU,
/// the recorded list of the step's launches on the CPU). Each entry owns its staging buffers, its
/// static buffers and its scratch arena, and gives them back only after its last replay finished.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/device.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::memory {

/// Element type of a staged array.
enum class StagedType : std::uint8_t { u8, i32, i64, f32, f64 };

/// The StagedType of T (one of std::uint8_t, std::int32_t, std::int64_t, float, double).
template <class T>
constexpr StagedType staged_type_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, std::uint8_t>) {
    return StagedType::u8;
  } else if constexpr (std::is_same_v<U, std::int32_t>) {
    return StagedType::i32;
  } else if constexpr (std::is_same_v<U, std::int64_t>) {
    return StagedType::i64;
  } else if constexpr (std::is_same_v<U, float>) {
    return StagedType::f32;
  } else {
    static_assert(std::is_same_v<U, double>,
                  "staged arrays hold uint8, int32, int64, float or double elements");
    return StagedType::f64;
  }
}

/// "f64[1000]" and the like.
std::string describe(StagedType type, std::size_t count);

/// One input or output of a staged run: the caller's memory (host memory on the CPU; device or
/// host memory on CUDA), its element count and type. A non-owning view.
struct StagedArray {
  const void* data = nullptr;
  void* mutable_data = nullptr;  ///< set for outputs
  std::size_t count = 0;
  StagedType type = StagedType::f64;

  [[nodiscard]] std::size_t bytes() const;
};

/// An input of a staged run.
template <class T>
StagedArray staged_input(ArrayView<const T> values) {
  return {values.data(), nullptr, values.size(), staged_type_of<T>()};
}
template <class T>
StagedArray staged_input(ArrayView<T> values) {
  return staged_input(ArrayView<const T>(values));
}
/// An output of a staged run.
template <class T>
StagedArray staged_output(ArrayView<T> values) {
  static_assert(!std::is_const_v<T>, "an output must be writable");
  return {values.data(), values.data(), values.size(), staged_type_of<T>()};
}

/// What run() does when a call's staged arrays differ in number, size or type from the capture of
/// that key: capture the step again (the old entry is released first), or throw afem::Error and
/// leave the entry as it was.
enum class ShapeChange : std::uint8_t { recapture, error };

/// Construction options of a CaptureCache.
struct CaptureOptions {
  std::string name = "capture";  ///< prefix of the entries' ledger labels
  /// Scratch arena of each entry, reserved before its capture starts; a step that needs more
  /// during capture gets afem::OutOfMemory (and no entry is kept).
  std::size_t scratch_bytes = std::size_t{1} << 20;
  /// Cap on the bytes all entries retain (staging, static buffers and scratch); 0: no cap. Before
  /// a capture the least recently used entries are released until the new one fits; an entry that
  /// cannot fit alone is refused with afem::OutOfMemory.
  std::size_t budget_bytes = 0;
  ShapeChange on_shape_change = ShapeChange::recapture;
};

/// Counters of a CaptureCache.
struct CaptureStats {
  std::size_t entries = 0;
  std::uint64_t hits = 0;       ///< runs that replayed an existing entry
  std::uint64_t misses = 0;     ///< runs that captured (first use, after erase, eviction, reshape)
  std::uint64_t replays = 0;    ///< replays of all entries (a miss replays once after capturing)
  std::uint64_t evictions = 0;  ///< entries released to keep within the budget
  std::uint64_t failed_captures = 0;  ///< captures that threw (nothing kept)
  std::size_t retained_bytes = 0;     ///< staging, static and scratch bytes of all entries
};

namespace detail {
class CaptureEntry;
}  // namespace detail

/// What a step sees while it is captured: the stream to put work on, the entry's staging, static
/// and scratch memory, and launch() to record work. Addresses it hands out stay valid until the
/// entry is released, so the recorded work may keep them.
class CaptureRecorder {
public:
  explicit CaptureRecorder(detail::CaptureEntry& entry) : entry_(&entry) {}

  /// The stream the step is captured on.
  [[nodiscard]] const Stream& stream() const;
  /// The entry's scratch arena (reserved before capture, never reset while the entry lives).
  /// Scratch given back during the capture may be handed out again to later work of the same
  /// step: the replays run in the recorded order, so that is safe.
  [[nodiscard]] Arena& scratch();
  /// Staging buffer of input `index`; throws afem::Error when there is no such input or its type
  /// is not T.
  template <class T>
  [[nodiscard]] ArrayView<const T> input(std::size_t index) const {
    return {static_cast<const T*>(staging(index, false, staged_type_of<T>())), count(index, false)};
  }
  /// Staging buffer of output `index` (copied out to the caller after every replay).
  template <class T>
  [[nodiscard]] ArrayView<T> output(std::size_t index) const {
    return {static_cast<T*>(staging(index, true, staged_type_of<T>())), count(index, true)};
  }
  /// A buffer the entry keeps across replays (state the step carries from one replay to the next),
  /// taken from the entry's scratch arena and released with the entry. Not initialised. A step
  /// takes its static buffers before it first calls scratch() (afem::Error otherwise): scratch
  /// given back during the capture is reused by later scratch, and must not be by a static buffer.
  template <class T>
  [[nodiscard]] ArrayView<T> static_buffer(std::size_t count, std::string_view name) {
    return {static_cast<T*>(static_bytes(count * sizeof(T), name)), count};
  }
  /// Records `work`: on CUDA it runs now and its stream work becomes part of the graph; on the CPU
  /// it is kept and called with the replay's stream at every replay. Work must not synchronize the
  /// stream or read results back to the host.
  void launch(std::function<void(const Stream&)> work);

private:
  [[nodiscard]] void* staging(std::size_t index, bool output, StagedType type) const;
  [[nodiscard]] std::size_t count(std::size_t index, bool output) const;
  [[nodiscard]] void* static_bytes(std::size_t bytes, std::string_view name);
  detail::CaptureEntry* entry_;
  bool scratch_used_ = false;
};

/// The step a CaptureCache captures: records its work through the recorder.
using CaptureStep = std::function<void(CaptureRecorder&)>;

namespace detail {

/// One captured step: its graph or launch list, staging buffers (pool), static buffers and scratch
/// (its own arena), and the event of its last replay. Built by capture(); released only by its
/// destructor, which waits for the last replay first.
class CaptureEntry {
public:
  /// Reserves the staging buffers and the scratch arena (before any capture starts).
  CaptureEntry(Pool& pool, std::string label, const Stream& stream,
               std::span<const StagedArray> inputs, std::span<const StagedArray> outputs,
               std::size_t scratch_bytes);
  /// Waits for the last replay, destroys the graph, releases the staging buffers, the static
  /// buffers and the arena, then destroys the event.
  ~CaptureEntry();
  CaptureEntry(const CaptureEntry&) = delete;
  CaptureEntry& operator=(const CaptureEntry&) = delete;
  CaptureEntry(CaptureEntry&&) = delete;
  CaptureEntry& operator=(CaptureEntry&&) = delete;

  /// Records `step`. On an exception the capture is closed and discarded and the exception passes
  /// on; the entry must then be destroyed.
  void capture(const CaptureStep& step);
  /// Copies the inputs in, replays, copies the outputs out, and records the replay's event.
  void replay(const Stream& stream, std::span<const StagedArray> inputs,
              std::span<const StagedArray> outputs);
  /// Empty when the arrays match the capture's; otherwise what differs.
  [[nodiscard]] std::string mismatch(std::span<const StagedArray> inputs,
                                     std::span<const StagedArray> outputs) const;
  /// Staging, static and scratch bytes held.
  [[nodiscard]] std::size_t retained_bytes() const;
  [[nodiscard]] const std::string& label() const { return label_; }

  /// Bytes an entry for these arrays retains before its step adds static buffers (they come from
  /// the scratch arena, which is counted whole).
  static std::size_t planned_bytes(std::span<const StagedArray> inputs,
                                   std::span<const StagedArray> outputs, std::size_t scratch_bytes);

private:
  friend class afem::memory::CaptureRecorder;
  struct Staged {
    StagedType type = StagedType::f64;
    std::size_t count = 0;
    Temporary<std::byte> buffer;
  };
  void wait_for_last_replay() const noexcept;

  std::string label_;
  Stream stream_;
  Stream last_stream_;
  std::unique_ptr<Arena> arena_;
  std::vector<Staged> inputs_;
  std::vector<Staged> outputs_;
  std::vector<Temporary<std::byte>> statics_;
  std::vector<std::function<void(const Stream&)>> launches_;  ///< the CPU's recording
  /// The CUDA build's handles (null on the CPU).
  struct Native {
    void* graph = nullptr;  ///< cudaGraphExec_t
    void* event = nullptr;  ///< cudaEvent_t of the last replay
  };
  Native native_;
};

}  // namespace detail

/// Captured steps by key. run(key, …) captures the step the first time a key is seen (or after its
/// entry was released) and replays it afterwards, copying the staged inputs in before and the
/// outputs out after each replay. Every release (erase, clear, eviction, reshape, destruction)
/// waits for the entry's last replay to finish, then destroys its graph, releases its staging
/// buffers and arena and destroys its event; the path is noexcept. Statistics in stats(); each
/// entry's buffers are in the pool's ledger under "<name>[<key>].…". The streams passed to run()
/// must outlive the entries replayed on them (release waits on them). One host thread at a time.
template <class Key, class Hash = std::hash<Key>>
class CaptureCache {
public:
  explicit CaptureCache(Pool& pool, CaptureOptions options = {})
      : pool_(&pool), options_(std::move(options)) {}
  /// Releases every entry (clear()).
  ~CaptureCache() { clear(); }
  CaptureCache(const CaptureCache&) = delete;
  CaptureCache& operator=(const CaptureCache&) = delete;
  CaptureCache(CaptureCache&&) = delete;
  CaptureCache& operator=(CaptureCache&&) = delete;

  /// Runs the step of `key` on `stream` with these staged arrays: replays its entry, or captures
  /// `step` first (when the key has no entry, or its arrays differ and the policy is recapture)
  /// and then replays it. Returns when the work is enqueued (on the CPU: done). A capture that
  /// throws leaves no entry and no retained bytes, and the exception passes on; so does an array
  /// mismatch under ShapeChange::error, which leaves the entry as it was.
  void run(const Key& key, const Stream& stream, std::span<const StagedArray> inputs,
           std::span<const StagedArray> outputs, const CaptureStep& step) {
    auto found = entries_.find(key);
    if (found != entries_.end()) {
      const std::string difference = found->second.entry->mismatch(inputs, outputs);
      if (difference.empty()) {
        touch(found->second);
        found->second.entry->replay(stream, inputs, outputs);
        ++stats_.hits;
        ++stats_.replays;
        return;
      }
      AFEM_EXPECTS(options_.on_shape_change == ShapeChange::recapture,
                   "CaptureCache '" + options_.name + "': " + found->second.entry->label() +
                       " was captured for other arrays: " + difference);
      release(found);
    }
    capture(key, stream, inputs, outputs, step);
  }

  /// Releases the entry of `key`; false when there is none.
  bool erase(const Key& key) noexcept {
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      return false;
    }
    release(found);
    return true;
  }
  /// Releases every entry; afterwards entries and retained bytes are 0.
  void clear() noexcept {
    while (!entries_.empty()) {
      release(entries_.begin());
    }
  }

  [[nodiscard]] bool contains(const Key& key) const { return entries_.contains(key); }
  /// Bytes the entry of `key` retains; 0 when there is none.
  [[nodiscard]] std::size_t retained_bytes(const Key& key) const {
    const auto found = entries_.find(key);
    return found == entries_.end() ? 0 : found->second.entry->retained_bytes();
  }
  [[nodiscard]] const CaptureStats& stats() const noexcept { return stats_; }
  [[nodiscard]] const CaptureOptions& options() const noexcept { return options_; }
  /// The scratch bytes of entries captured from now on (entries held keep theirs).
  void set_scratch_bytes(std::size_t bytes) noexcept { options_.scratch_bytes = bytes; }

private:
  struct Slot {
    std::unique_ptr<detail::CaptureEntry> entry;
    typename std::list<Key>::iterator recent;  ///< position in recency_ (front: most recent)
    std::size_t bytes = 0;
  };
  using Map = std::unordered_map<Key, Slot, Hash>;

  static std::string key_text(const Key& key, std::uint64_t serial) {
    if constexpr (std::is_integral_v<Key>) {
      return std::to_string(key);
    } else if constexpr (std::is_convertible_v<const Key&, std::string_view>) {
      return std::string(std::string_view(key));
    } else {
      return "#" + std::to_string(serial);
    }
  }

  void touch(Slot& slot) { recency_.splice(recency_.begin(), recency_, slot.recent); }

  void capture(const Key& key, const Stream& stream, std::span<const StagedArray> inputs,
               std::span<const StagedArray> outputs, const CaptureStep& step) {
    const std::string label = options_.name + "[" + key_text(key, serial_++) + "]";
    const std::size_t planned =
        detail::CaptureEntry::planned_bytes(inputs, outputs, options_.scratch_bytes);
    if (options_.budget_bytes > 0) {
      if (planned > options_.budget_bytes) {
        ++stats_.failed_captures;
        throw OutOfMemory("CaptureCache '" + options_.name + "': " + label + " needs " +
                          std::to_string(planned) + " bytes (staging and scratch), more than " +
                          "the budget of " + std::to_string(options_.budget_bytes));
      }
      while (!recency_.empty() && stats_.retained_bytes + planned > options_.budget_bytes) {
        release(entries_.find(recency_.back()));
        ++stats_.evictions;
      }
    }
    std::unique_ptr<detail::CaptureEntry> entry;
    try {
      entry = std::make_unique<detail::CaptureEntry>(*pool_, label, stream, inputs, outputs,
                                                     options_.scratch_bytes);
      entry->capture(step);
      entry->replay(stream, inputs, outputs);  // the first replay: a failure keeps nothing
    } catch (...) {
      ++stats_.failed_captures;
      throw;  // `entry` releases whatever it holds
    }
    ++stats_.misses;
    ++stats_.replays;
    recency_.push_front(key);
    const std::size_t bytes = entry->retained_bytes();
    try {
      entries_.emplace(key, Slot{std::move(entry), recency_.begin(), bytes});
    } catch (...) {
      recency_.pop_front();
      throw;
    }
    stats_.retained_bytes += bytes;
    stats_.entries = entries_.size();
  }

  void release(typename Map::iterator position) noexcept {
    stats_.retained_bytes -= position->second.bytes;
    recency_.erase(position->second.recent);
    entries_.erase(position);  // ~CaptureEntry: waits, then releases
    stats_.entries = entries_.size();
  }

  Pool* pool_;
  CaptureOptions options_;
  Map entries_;
  std::list<Key> recency_;
  CaptureStats stats_;
  std::uint64_t serial_ = 0;
};

}  // namespace afem::memory
