#pragma once

/// @file
/// Communicator: the MPI communicator of the distributed layer (built with ARENAFEM_MPI), with the
/// collectives it needs: sums added in rank order, exchanges of host vectors for setup, and
/// collective error checks so that a failure on one rank stops every rank with the same message.
/// MpiSession starts and ends MPI for a program.

#ifndef ARENAFEM_WITH_MPI
#error "arenafem/memory/communicator.hpp needs a build with ARENAFEM_MPI=ON"
#endif

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "arenafem/memory/error.hpp"

namespace afem::memory {

/// The MPI datatype of T (a fundamental type of one of the sizes MPI names).
template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return MPI_INT64_T;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return MPI_INT32_T;
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return MPI_UINT8_T;
  } else {
    static_assert(std::is_same_v<T, char>, "mpi_type: double, int64, int32, uint8 or char");
    return MPI_CHAR;
  }
}

/// An error that every rank of a communicator throws together (Communicator::collective): the
/// message is the same on every rank, so a program may let rank 0 alone report it.
class CollectiveError : public Error {
public:
  using Error::Error;
};

/// The entries [first, last) of a message buffer that go to, or come from, one rank.
struct MessageRange {
  int rank = 0;
  std::int32_t first = 0;
  std::int32_t last = 0;
};

/// An MPI communicator (MPI_COMM_WORLD unless given) and the collectives of the distributed layer.
/// Holds the handle only: it neither duplicates nor frees the communicator. Every member is
/// collective (every rank calls it, in the same order) unless its comment says otherwise. MPI
/// errors are returned, not fatal: a failing call throws afem::Error naming it.
class Communicator {
public:
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);

  /// This rank and the rank count (not collective).
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] MPI_Comm handle() const { return comm_; }

  /// The sum over ranks, added in rank order after an all-gather: the same bits on every rank and
  /// in every run with the same rank count, whatever algorithm MPI picks for reductions.
  [[nodiscard]] double sum(double value) const;
  [[nodiscard]] std::int64_t sum(std::int64_t value) const;
  /// The sum of `value` over the ranks below this one (0 on rank 0).
  [[nodiscard]] std::int64_t exclusive_sum(std::int64_t value) const;
  [[nodiscard]] std::int64_t max(std::int64_t value) const;
  [[nodiscard]] double max(double value) const;
  /// Every rank's `value`, in rank order.
  [[nodiscard]] std::vector<std::int64_t> all_gather(std::int64_t value) const;

  /// send[r] of every rank arrives as receive[s] on rank r, s the sender (one value per rank each
  /// way, MPI_Alltoall; allocates nothing). Throws afem::Error unless both spans hold size()
  /// values.
  void all_to_all(std::span<const std::int64_t> send, std::span<std::int64_t> receive) const;
  /// Rank `root`'s `values` on every rank (sizes included).
  template <class T>
  void broadcast(std::vector<T>& values, int root) const {
    auto count = static_cast<std::int64_t>(values.size());
    check(MPI_Bcast(&count, 1, MPI_INT64_T, root, comm_), "MPI_Bcast");
    values.resize(static_cast<std::size_t>(count));
    check(MPI_Bcast(values.data(), static_cast<int>(count), mpi_type<T>(), root, comm_),
          "MPI_Bcast");
  }

  /// What each rank sends every other: to[r] goes to rank r (to has size() vectors, some empty);
  /// returns from[r], what rank r sent this one. For setup (plans, meshes): host vectors.
  template <class T>
  [[nodiscard]] std::vector<std::vector<T>> exchange(const std::vector<std::vector<T>>& to) const {
    raise_if_any_failed(to.size() != static_cast<std::size_t>(size_)
                            ? "Communicator::exchange: " + std::to_string(to.size()) +
                                  " vectors for " + std::to_string(size_) + " ranks"
                            : std::string());
    std::size_t total_sent = 0;
    for (const std::vector<T>& part : to) {
      total_sent += part.size();
    }
    // MPI counts are ints: a larger exchange is refused on every rank rather than overflowing.
    raise_if_any_failed(total_sent > static_cast<std::size_t>(INT32_MAX)
                            ? "Communicator::exchange: " + std::to_string(total_sent) +
                                  " values from one rank, more than an MPI count holds"
                            : std::string());
    std::vector<int> send_counts(static_cast<std::size_t>(size_));
    std::vector<int> send_offsets(static_cast<std::size_t>(size_));
    std::vector<T> send;
    send.reserve(total_sent);
    for (std::size_t r = 0; r < to.size(); ++r) {
      send_offsets[r] = static_cast<int>(send.size());
      send_counts[r] = static_cast<int>(to[r].size());
      send.insert(send.end(), to[r].begin(), to[r].end());
    }
    std::vector<int> receive_counts(static_cast<std::size_t>(size_));
    check(MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, comm_),
          "MPI_Alltoall");
    std::vector<int> receive_offsets(static_cast<std::size_t>(size_));
    std::int64_t total = 0;
    for (std::size_t r = 0; r < receive_counts.size(); ++r) {
      receive_offsets[r] = static_cast<int>(std::min<std::int64_t>(total, INT32_MAX));
      total += receive_counts[r];
    }
    raise_if_any_failed(total > INT32_MAX ? "Communicator::exchange: " + std::to_string(total) +
                                                " values to one rank, more than an MPI count holds"
                                          : std::string());
    std::vector<T> receive(static_cast<std::size_t>(total));
    check(MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), mpi_type<T>(),
                        receive.data(), receive_counts.data(), receive_offsets.data(),
                        mpi_type<T>(), comm_),
          "MPI_Alltoallv");
    std::vector<std::vector<T>> from(static_cast<std::size_t>(size_));
    for (std::size_t r = 0; r < from.size(); ++r) {
      const auto begin = receive.begin() + receive_offsets[r];
      from[r].assign(begin, begin + receive_counts[r]);
    }
    return from;
  }

  /// Rank `root`'s per_rank[r] on rank r (per_rank is read on the root only).
  template <class T>
  [[nodiscard]] std::vector<T> scatter(const std::vector<std::vector<T>>& per_rank,
                                       int root) const {
    const bool wrong = rank_ == root && per_rank.size() != static_cast<std::size_t>(size_);
    raise_if_any_failed(wrong ? "Communicator::scatter: " + std::to_string(per_rank.size()) +
                                    " vectors for " + std::to_string(size_) + " ranks"
                              : std::string());
    if (rank_ == root) {
      return std::move(exchange(per_rank)[static_cast<std::size_t>(root)]);
    }
    return std::move(exchange(std::vector<std::vector<T>>(
        static_cast<std::size_t>(size_)))[static_cast<std::size_t>(root)]);
  }

  /// Runs `work` on every rank. If it throws on any rank, every rank throws CollectiveError with
  /// the message of the lowest rank that failed, prefixed "rank R: " (so no rank waits for one
  /// that left). Local work that can fail (allocations, input) between two collective calls of
  /// the distributed layer runs inside it.
  template <class F>
  void collective(F&& work) const {
    std::string failure;
    try {
      work();
    } catch (const CollectiveError&) {
      throw;  // raised on every rank already
    } catch (const std::exception& error) {
      failure = error.what();
      if (failure.empty()) {
        failure = "an exception without a message";
      }
    }
    raise_if_any_failed(failure);
  }

  /// Throws CollectiveError on every rank when `failure` is not empty on some rank (see
  /// collective).
  void raise_if_any_failed(const std::string& failure) const;

  /// Posts a nonblocking receive into (or send from) `buffer` for each range, `width` doubles per
  /// entry, appending the requests to `requests` (not collective: the ranges' ranks post the
  /// matching calls). wait_all() completes them.
  void post_receives(std::span<const MessageRange> ranges, double* buffer, std::size_t width,
                     int tag, std::vector<MPI_Request>& requests) const;
  void post_sends(std::span<const MessageRange> ranges, const double* buffer, std::size_t width,
                  int tag, std::vector<MPI_Request>& requests) const;
  /// Waits for every request and clears the list (its capacity stays).
  static void wait_all(std::vector<MPI_Request>& requests);

  /// Throws afem::Error naming `call` unless `code` is MPI_SUCCESS (not collective).
  static void check(int code, std::string_view call);

private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

/// Starts MPI (MPI_Init_thread, funneled: only the main thread calls MPI) and ends it
/// (MPI_Finalize) when destroyed, for a program. Makes MPI errors on MPI_COMM_WORLD returned, so
/// that Communicator turns them into afem::Error (a communicator of a program that set no such
/// handler aborts on them instead). One per process; throws afem::Error when MPI cannot start or
/// does not offer funneled threads.
class MpiSession {
public:
  MpiSession(int& argc, char**& argv);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  MpiSession(MpiSession&&) = delete;
  MpiSession& operator=(MpiSession&&) = delete;
  ~MpiSession();
};

/// Whether this process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE, PMIx
/// PMIX_RANK, PMI-based launchers PMI_SIZE): programs that also run alone start MPI only then.
/// Not collective.
[[nodiscard]] bool launched_by_mpi();

}  // namespace afem::memory
