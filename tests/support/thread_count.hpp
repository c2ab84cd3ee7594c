#pragma once

/// @file
/// ThreadCount: sets the OpenMP thread count (and so the parallel_for team's size) for a scope and
/// puts the previous one back; without OpenMP it does nothing.

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace afem::test {

class ThreadCount {
public:
  explicit ThreadCount(int count) {
#if defined(_OPENMP)
    previous_ = omp_get_max_threads();
    omp_set_num_threads(count);
#else
    (void)count;
#endif
  }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
  ThreadCount(ThreadCount&&) = delete;
  ThreadCount& operator=(ThreadCount&&) = delete;
  ~ThreadCount() {
#if defined(_OPENMP)
    omp_set_num_threads(previous_);
#endif
  }

private:
  int previous_ = 1;
};

}  // namespace afem::test
