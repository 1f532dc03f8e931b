// Distributed k-means over MPI: every rank holds a shard of the rows (link flashkm::mpi).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"
#include "flashkm/source.hpp"

namespace flashkm::mpi {

/// The communicator a call runs on, given by its Fortran handle so that this header needs no
/// <mpi.h>: `MPI_Comm_c2f(comm)` in C or C++, `comm.py2f()` in mpi4py. The default (no handle)
/// is MPI_COMM_WORLD. Every function below takes one and is collective over it.
struct Comm {
  std::optional<int> fortran;
};

/// MPI_Init_thread on construction (unless MPI is already initialised), MPI_Finalize on
/// destruction (if it initialised it). Without mpirun, MPI runs as a single rank.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

 private:
  bool owner_ = false;
};

/// This process's rank and the number of ranks in the communicator.
int rank(Comm comm = {});
int size(Comm comm = {});

/// Rows [first, last) of `total` rows that this rank holds in an even split in rank order.
std::pair<std::size_t, std::size_t> shard_range(std::size_t total, Comm comm = {});

/// Runs fn on every rank (collective). If it throws on any rank, every rank throws the same
/// exception type (InvalidArgument, InvalidData, or Error) with the message of the lowest
/// failing rank, prefixed "rank R: " -- so that no rank waits forever for one that failed.
/// Those exceptions also derive from AgreedError; an exception that does not was thrown on
/// one rank only, and the others may be waiting for it (see abort()).
void collectively(const std::function<void()>& fn, Comm comm = {});

/// The mark of an exception every rank threw together (see collectively()).
struct AgreedError {
  virtual ~AgreedError() = default;
};

/// Ranks of the communicator on this node (which share its memory).
int ranks_on_this_node(Comm comm = {});

/// Ends every rank of the job (MPI_Abort) with this exit code.
[[noreturn]] void abort(int code, Comm comm = {});

/// Exact Lloyd k-means over the rows of all ranks' shards, concatenated in rank order
/// (collective over `comm`, MPI_COMM_WORLD by default; every rank passes the same options and its own shard, at
/// least one row, and its own rows' sample weights). Every rank returns the same centroids,
/// inertia, n_iter and history; labels are those of the rank's own shard. Assignment is local;
/// per-cluster sums and weights, inertia and label changes are summed over the ranks once per
/// iteration (a reduce to rank 0 and a broadcast, so that every rank gets the same bits)
/// (K*D + K + 3 doubles); empty clusters take the globally farthest points. Initialisation:
/// `random` draws exactly the rows a single process would; k-means++ runs on a sample of at most
/// max(64 K, 65536) rows gathered from all ranks (all rows when N is at most that, giving the
/// single-process centres). Results equal the single-process fit up to float64 rounding of the
/// sums (see docs/DISTRIBUTED.md). An error on any rank is thrown on all (see collectively()).
template <class T>
KMeansResult<T> fit(MatrixView<T> shard, const KMeansOptions& options, Comm comm = {});

/// The same over a streamed shard (see flashkm::RowSource).
template <class T>
KMeansResult<T> fit(RowSource<T>& shard, const KMeansOptions& options, Comm comm = {});

/// The shards' labels concatenated in rank order on rank 0 (empty on other ranks). Collective.
std::vector<std::int32_t> gather_to_root(const std::vector<std::int32_t>& local, Comm comm = {});

}  // namespace flashkm::mpi
