// The processes a command runs on: this one alone, or the MPI ranks of `--distributed`. MPI
// appears only behind this interface (ranks.cc), so that the commands have one code path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "flashkm/kmeans.hpp"
#include "flashkm/source.hpp"

namespace flashkm::cli {

class Ranks {
 public:
  virtual ~Ranks() = default;

  virtual bool distributed() const = 0;
  /// The process that writes the outputs and prints (rank 0).
  virtual bool root() const = 0;
  virtual int count() const = 0;

  /// Runs fn; distributed, on every rank together, so that an error on one rank stops all of
  /// them with the same exception instead of leaving the others waiting.
  virtual void together(const std::function<void()>& fn) const = 0;
  /// The rows [first, last) this process clusters: all n, or this rank's even share.
  virtual std::pair<std::size_t, std::size_t> my_rows(std::size_t n) const = 0;
  /// The default memory limit: half the memory available now, shared by the ranks of this node.
  virtual std::size_t default_memory_limit() const = 0;

  /// fit() of this process's rows; distributed, every rank gets the same model and its own
  /// rows' labels.
  virtual KMeansResult<float> fit(MatrixView<float> X, const KMeansOptions& o) const = 0;
  virtual KMeansResult<double> fit(MatrixView<double> X, const KMeansOptions& o) const = 0;
  virtual KMeansResult<float> fit(RowSource<float>& X, const KMeansOptions& o) const = 0;
  virtual KMeansResult<double> fit(RowSource<double>& X, const KMeansOptions& o) const = 0;
  /// All labels in row order on the root (the other ranks get theirs back).
  virtual std::vector<std::int32_t> gather_labels(std::vector<std::int32_t> mine) const = 0;

  /// The exit code for an error that ends the command, printed once. Distributed, an error
  /// every rank threw together is printed by rank 0; one thrown on this rank alone ends the job.
  virtual int fail(std::exception_ptr error) const = 0;
};

/// This process alone.
std::unique_ptr<Ranks> single_process();

/// The MPI ranks this process belongs to (MPI is initialised here and finalised when the object
/// goes). Throws UsageError when flashkm was built without MPI.
std::unique_ptr<Ranks> mpi_ranks(int* argc, char*** argv);

}  // namespace flashkm::cli
