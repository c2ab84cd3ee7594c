#pragma once

/// @file
/// How a program that runs over MPI ranks (built with ARENAFEM_MPI) ends on an error.

#ifndef ARENAFEM_WITH_MPI
#error "arenafem/apps/common/rank_errors.hpp needs a build with ARENAFEM_MPI=ON"
#endif

#include <cstdio>
#include <exception>

#include "arenafem/memory/communicator.hpp"

namespace afem::apps {

/// Reports `error`, caught by a program running over the ranks of MPI_COMM_WORLD, and returns
/// `status`. A memory::CollectiveError is every rank's at once: rank 0 prints it. Any other error
/// is this rank's alone while the others may wait for it: this rank prints it with its number
/// and stops every rank (MPI_Abort with `status`).
inline int report_rank_error(const std::exception& error, int status) {
  const memory::Communicator comm;
  if (dynamic_cast<const memory::CollectiveError*>(&error) == nullptr) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), error.what());
    MPI_Abort(comm.handle(), status);
  }
  if (comm.rank() == 0) {
    std::fprintf(stderr, "%s\n", error.what());
  }
  return status;
}

}  // namespace afem::apps
