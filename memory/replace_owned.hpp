#pragma once

/// @file
/// replace_owned: the one path by which a class swaps a Temporary it owns.

#include "arenafem/memory/temporary.hpp"

namespace afem::memory {

/// Puts `fresh` into `slot` and then releases the buffer `slot` held. Use it when the new buffer
/// was built from the old one: both are live until the swap, and nothing changes if building
/// `fresh` threw. The old buffer is released before this returns.
template <class T>
void replace_owned(Temporary<T>& slot, Temporary<T>&& fresh) noexcept {
  Temporary<T> old = std::move(fresh);
  slot.swap(old);
}  // `old` now holds the previous buffer and releases it here.

/// Releases the buffer `slot` holds, then borrows `count` elements from `source` under `label`
/// into it, and returns `slot`. Use it when the new contents do not read the old ones: the old
/// block is back in its source first, so the peak is one buffer, not two (and a Pool hands the
/// same block back when the size class matches). If the borrow throws, `slot` is left empty:
/// its old contents were declared dead by the call.
template <class T>
Temporary<T>& replace_owned(Temporary<T>& slot, MemorySource& source, std::size_t count,
                            std::string_view label) {
  slot.release();
  Temporary<T> fresh = borrow_temporary<T>(source, count, label);
  slot.swap(fresh);
  return slot;
}

}  // namespace afem::memory
