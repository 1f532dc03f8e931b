// How a command holds the rows it clusters, chosen once from the input and --memory-limit:
// in memory, in memory as 16-bit values, or streamed from the file in chunks. The plan yields a
// Rows object, and fit and predict take it without asking which kind it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "file_source.hpp"
#include "flashkm/kmeans.hpp"
#include "io/dataset.hpp"
#include "ranks.hpp"

namespace flashkm::cli {

enum class Holding {
  kMemory,    ///< the rows read into memory as T
  kHalf,      ///< float16 rows kept 16-bit in memory (float32 results, bitwise; AMX tiles)
  kStreamed,  ///< the file streamed in chunks (double-buffered; read once per pass)
};

struct LoadPlan {
  Holding holding = Holding::kMemory;
  std::size_t limit = 0;         ///< the memory limit the plan was made for
  std::size_t buffer_bytes = 0;  ///< streamed: bytes of chunk buffers
  bool prune_fits = true;        ///< the pruning bounds fit in the limit (else --prune auto turns off)
  bool sketch_fits = true;       ///< rows in memory: k-means++'s 8-bit sketch of them fits too
                                 ///< (else the fit seeds without it: KMeansOptions::seed_sketch)
  bool streamed() const { return holding == Holding::kStreamed; }
  /// "in memory", "in memory, 16-bit", "streamed".
  const char* describe() const;
};

/// What the plan must make room for besides X.
struct PlanNeeds {
  std::size_t k = 0;
  bool weights = false;
  bool prune = false;       ///< room for the pruning bounds is wanted
  bool prune_auto = false;  ///< ... but if they do not fit, plan without them rather than fail
  bool keep_half = false;   ///< float16 rows may stay 16-bit (not under MPI)
  bool seed_sketch = false; ///< k-means++ seeds rows held in memory with their 8-bit sketch
};

/// The plan for `mine` (this process's rows of the file; CSV is always read into memory).
/// Throws UsageError when even streaming cannot fit in `limit`.
template <class T>
LoadPlan plan_load(const io::DatasetInfo& mine, std::size_t limit, const PlanNeeds& needs);

/// The rows a plan yields.
template <class T>
class Rows {
 public:
  virtual ~Rows() = default;
  virtual KMeansResult<T> fit(const KMeansOptions& options, const Ranks& ranks) = 0;
  virtual std::vector<std::int32_t> predict(MatrixView<T> centroids, const PredictOptions& options) = 0;
  /// Seconds spent reading the file (streamed: the reader thread's time).
  virtual double read_seconds() const = 0;
  /// Streamed: the reading statistics; otherwise null.
  virtual const StreamStats* stream_stats() const { return nullptr; }
};

/// Rows [first_row, last_row) of `info`'s file, held as `plan` says. Streamed, nothing is read
/// until the first pass.
template <class T>
std::unique_ptr<Rows<T>> load(const LoadPlan& plan, const io::DatasetInfo& info, std::optional<std::size_t> dim,
                              std::size_t first_row, std::size_t last_row);

}  // namespace flashkm::cli
