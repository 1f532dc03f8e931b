#include "load_plan.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <type_traits>

#include "errors.hpp"
#include "flashkm/half.hpp"
#include "progress.hpp"

namespace flashkm::cli {
namespace {

// Bytes per row the engine and the command keep besides X: labels (run + best, and the
// incremental update's copy of the last step's, with its batch of moves: 2), distances,
// k-means++'s closest distances and its per-row ones, random init's keys, weights; seeding's
// owners (4), row norms (8) and recorded lowerings (at most one per two rows: 8) or k-means||'s
// round buffers (9).
std::size_t per_row_bytes(std::size_t elem, bool weights) {
  return 3 * sizeof(std::int32_t) + 2 + 3 * elem + 16 + 20 + (weights ? sizeof(double) : 0);
}

// Bytes per row of the pruning bounds (an upper bound and up to 64 group lower bounds, or one
// per centroid where K of them fit, float each): the engine keeps them within a row of X itself
// (8 bytes for the narrowest rows).
std::size_t prune_row_bytes(std::size_t cols, std::size_t elem, std::size_t k, bool prune) {
  return prune ? std::max<std::size_t>(8, std::min<std::size_t>(4 * (1 + std::max<std::size_t>(64, k)), cols * elem)) : 0;
}

template <class T>
LoadPlan plan_with(const io::DatasetInfo& info, std::size_t limit, const PlanNeeds& needs, bool prune) {
  LoadPlan p;
  p.limit = limit;
  const bool half = std::is_same_v<T, float> && needs.keep_half && info.dtype == io::DType::kF16;
  const std::size_t x_elem = half ? sizeof(std::uint16_t) : sizeof(T);
  const double rows = static_cast<double>(info.rows), cols = static_cast<double>(info.cols);
  const double x_bytes = rows * cols * static_cast<double>(x_elem);
  const double fixed =
      rows * static_cast<double>(per_row_bytes(sizeof(T), needs.weights) + prune_row_bytes(info.cols, sizeof(T), needs.k, prune)) +
      8.0 * static_cast<double>(needs.k) * cols * 8.0;
  if (info.format == io::Format::kCsv || x_bytes + fixed <= static_cast<double>(limit)) {
    p.holding = half ? Holding::kHalf : Holding::kMemory;
    // k-means++'s sketch of float rows in memory (cpu/sketch.hpp): a byte per feature, rounded
    // up to quads, and 12 bytes a row, while seeding runs. Where it would not fit, seed without.
    const double sketch = rows * static_cast<double>((info.cols + 3) / 4 * 4 + 12);
    p.sketch_fits = !needs.seed_sketch || half || x_bytes + fixed + sketch <= static_cast<double>(limit);
    return p;
  }
  p.holding = Holding::kStreamed;
  const double left = static_cast<double>(limit) - fixed;
  const std::size_t granule = row_source_granule(info.cols, sizeof(T));
  const double need = 2.0 * static_cast<double>(granule) * cols * sizeof(T);
  if (left < need) {
    throw UsageError("--memory-limit " + human_bytes(static_cast<double>(limit)) + " is too small for " + info.path +
                     " (" + std::to_string(info.rows) + " x " + std::to_string(info.cols) + "): streaming needs " +
                     human_bytes(fixed) + " for per-row arrays and centroids plus " + human_bytes(need) +
                     " for two chunks of " + std::to_string(granule) + " rows");
  }
  p.buffer_bytes = static_cast<std::size_t>(left);
  return p;
}

using Clock = std::chrono::steady_clock;

// Rows [r0, r1) of the file as E (T, or float16's raw bits); `seconds` gets the reading time.
template <class E>
std::vector<E> read_rows(const io::DatasetInfo& info, std::optional<std::size_t> dim, std::size_t r0, std::size_t r1,
                         double* seconds) {
  io::Dataset data(info.path, dim);
  const auto t0 = Clock::now();
  std::vector<E> out((r1 - r0) * info.cols);
  data.read_rows<E>(r0, r1, out.data());
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

template <class T>
class MemoryRows final : public Rows<T> {
 public:
  MemoryRows(const io::DatasetInfo& info, std::optional<std::size_t> dim, std::size_t r0, std::size_t r1)
      : rows_(r1 - r0), cols_(info.cols), X_(read_rows<T>(info, dim, r0, r1, &read_seconds_)) {}
  KMeansResult<T> fit(const KMeansOptions& o, const Ranks& ranks) override { return ranks.fit(view(), o); }
  std::vector<std::int32_t> predict(MatrixView<T> c, const PredictOptions& o) override {
    return flashkm::predict(view(), c, o);
  }
  double read_seconds() const override { return read_seconds_; }

 private:
  MatrixView<T> view() const { return MatrixView<T>(X_.data(), rows_, cols_); }
  std::size_t rows_, cols_;
  double read_seconds_ = 0;  // before X_, whose initialiser sets it
  std::vector<T> X_;
};

// float16 rows kept 16-bit: half the memory, and bitwise the float32 result.
class HalfRows final : public Rows<float> {
 public:
  HalfRows(const io::DatasetInfo& info, std::optional<std::size_t> dim, std::size_t r0, std::size_t r1)
      : rows_(r1 - r0), cols_(info.cols), H_(read_rows<std::uint16_t>(info, dim, r0, r1, &read_seconds_)) {}
  KMeansResult<float> fit(const KMeansOptions& o, const Ranks& ranks) override {
    if (ranks.distributed()) throw std::logic_error("16-bit rows are not planned under MPI");
    return flashkm::fit(view(), o);
  }
  std::vector<std::int32_t> predict(MatrixView<float> c, const PredictOptions& o) override {
    return flashkm::predict(view(), c, o);
  }
  double read_seconds() const override { return read_seconds_; }

 private:
  HalfView view() const { return HalfView{H_.data(), rows_, cols_, cols_, HalfType::kFloat16}; }
  std::size_t rows_, cols_;
  double read_seconds_ = 0;  // before H_, whose initialiser sets it
  std::vector<std::uint16_t> H_;
};

template <class T>
class StreamedRows final : public Rows<T> {
 public:
  StreamedRows(const LoadPlan& plan, const io::DatasetInfo& info, std::optional<std::size_t> dim, std::size_t r0,
               std::size_t r1)
      : src_(info.path, dim, plan.buffer_bytes, r0, r1 - r0) {}
  KMeansResult<T> fit(const KMeansOptions& o, const Ranks& ranks) override { return ranks.fit(src_, o); }
  std::vector<std::int32_t> predict(MatrixView<T> c, const PredictOptions& o) override {
    return flashkm::predict(src_, c, o);
  }
  double read_seconds() const override { return src_.stats().read_seconds; }
  const StreamStats* stream_stats() const override { return &src_.stats(); }

 private:
  FileRowSource<T> src_;
};

}  // namespace

const char* LoadPlan::describe() const {
  switch (holding) {
    case Holding::kMemory: return "in memory";
    case Holding::kHalf: return "in memory, 16-bit";
    case Holding::kStreamed: return "streamed";
  }
  return "?";
}

template <class T>
LoadPlan plan_load(const io::DatasetInfo& mine, std::size_t limit, const PlanNeeds& needs) {
  if (!needs.prune) return plan_with<T>(mine, limit, needs, false);
  try {
    return plan_with<T>(mine, limit, needs, true);
  } catch (const UsageError&) {
    if (!needs.prune_auto) throw;
  }
  LoadPlan p = plan_with<T>(mine, limit, needs, false);
  p.prune_fits = false;
  return p;
}

template <class T>
std::unique_ptr<Rows<T>> load(const LoadPlan& plan, const io::DatasetInfo& info, std::optional<std::size_t> dim,
                              std::size_t first_row, std::size_t last_row) {
  switch (plan.holding) {
    case Holding::kMemory: return std::make_unique<MemoryRows<T>>(info, dim, first_row, last_row);
    case Holding::kStreamed: return std::make_unique<StreamedRows<T>>(plan, info, dim, first_row, last_row);
    case Holding::kHalf:
      if constexpr (std::is_same_v<T, float>) return std::make_unique<HalfRows>(info, dim, first_row, last_row);
      break;
  }
  throw std::logic_error("load: a 16-bit plan for float64 rows");
}

template LoadPlan plan_load<float>(const io::DatasetInfo&, std::size_t, const PlanNeeds&);
template LoadPlan plan_load<double>(const io::DatasetInfo&, std::size_t, const PlanNeeds&);
template std::unique_ptr<Rows<float>> load(const LoadPlan&, const io::DatasetInfo&, std::optional<std::size_t>,
                                           std::size_t, std::size_t);
template std::unique_ptr<Rows<double>> load(const LoadPlan&, const io::DatasetInfo&, std::optional<std::size_t>,
                                            std::size_t, std::size_t);

}  // namespace flashkm::cli
