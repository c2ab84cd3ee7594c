#include "arenafem/memory/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace afem::memory {

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

void Communicator::check(int code, std::string_view call) {
  if (code == MPI_SUCCESS) {
    return;
  }
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(call) +
              " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

std::vector<std::int64_t> Communicator::all_gather(std::int64_t value) const {
  std::vector<std::int64_t> values(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&value, 1, MPI_INT64_T, values.data(), 1, MPI_INT64_T, comm_),
        "MPI_Allgather");
  return values;
}

void Communicator::all_to_all(std::span<const std::int64_t> send,
                              std::span<std::int64_t> receive) const {
  AFEM_EXPECTS(send.size() == static_cast<std::size_t>(size_) && receive.size() == send.size(),
               "Communicator::all_to_all: " + std::to_string(send.size()) + " values to send and " +
                   std::to_string(receive.size()) + " to receive for " + std::to_string(size_) +
                   " ranks");
  check(MPI_Alltoall(send.data(), 1, MPI_INT64_T, receive.data(), 1, MPI_INT64_T, comm_),
        "MPI_Alltoall");
}

double Communicator::sum(double value) const {
  std::vector<double> values(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, comm_), "MPI_Allgather");
  double total = 0.0;
  for (const double v : values) {
    total += v;
  }
  return total;
}

std::int64_t Communicator::sum(std::int64_t value) const {
  const std::vector<std::int64_t> values = all_gather(value);
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

std::int64_t Communicator::exclusive_sum(std::int64_t value) const {
  const std::vector<std::int64_t> values = all_gather(value);
  return std::accumulate(values.begin(), values.begin() + rank_, std::int64_t{0});
}

std::int64_t Communicator::max(std::int64_t value) const {
  const std::vector<std::int64_t> values = all_gather(value);
  return *std::max_element(values.begin(), values.end());
}

double Communicator::max(double value) const {
  double result = 0.0;
  check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
  return result;
}

void Communicator::post_receives(std::span<const MessageRange> ranges, double* buffer,
                                 std::size_t width, int tag,
                                 std::vector<MPI_Request>& requests) const {
  for (const MessageRange& range : ranges) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(buffer + static_cast<std::size_t>(range.first) * width,
                    static_cast<int>(static_cast<std::size_t>(range.last - range.first) * width),
                    MPI_DOUBLE, range.rank, tag, comm_, &request),
          "MPI_Irecv");
    requests.push_back(request);
  }
}

void Communicator::post_sends(std::span<const MessageRange> ranges, const double* buffer,
                              std::size_t width, int tag,
                              std::vector<MPI_Request>& requests) const {
  for (const MessageRange& range : ranges) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(buffer + static_cast<std::size_t>(range.first) * width,
                    static_cast<int>(static_cast<std::size_t>(range.last - range.first) * width),
                    MPI_DOUBLE, range.rank, tag, comm_, &request),
          "MPI_Isend");
    requests.push_back(request);
  }
}

void Communicator::wait_all(std::vector<MPI_Request>& requests) {
  const int code =
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  requests.clear();
  check(code, "MPI_Waitall");
}

void Communicator::raise_if_any_failed(const std::string& failure) const {
  const int mine = failure.empty() ? size_ : rank_;
  int first = size_;
  check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
  if (first == size_) {
    return;
  }
  std::vector<char> text(failure.begin(), failure.end());
  broadcast(text, first);
  throw CollectiveError("rank " + std::to_string(first) + ": " +
                        std::string(text.begin(), text.end()));
}

MpiSession::MpiSession(int& argc, char**& argv) {
  int provided = 0;
  Communicator::check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided),
                      "MPI_Init_thread");
  Communicator::check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                      "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw Error("MpiSession: this MPI offers no funneled threads (level " +
                std::to_string(provided) + "); the OpenMP threads of the CPU backend need it");
  }
}

MpiSession::~MpiSession() {
  MPI_Finalize();
}

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_SIZE") != nullptr;
}

}  // namespace afem::memory
