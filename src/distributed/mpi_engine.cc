// The MPI engine: a CPU engine over this rank's shard, with the Lloyd driver's global steps
// (means, sums, inertia, farthest points, initialisation, decisions) done collectively. The
// only file that includes <mpi.h>.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/engine.hpp"
#include "core/fit_engine.hpp"
#include "core/init.hpp"
#include "core/validate.hpp"
#include "core/backend.hpp"
#include "flashkm/distributed.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::mpi {
namespace {

// k-means++ over all ranks runs on a gathered sample of at most this many rows (or 64 per
// centre, if more): enough for the greedy seeding to see every dense region.
constexpr std::size_t kMinSampleRows = 65536;
constexpr std::size_t kSamplePerCentre = 64;

// The communicator of the call in progress: MPI_COMM_WORLD, or the one a public function was
// given (set for the length of that call by UseComm; MPI is called from one thread, FUNNELED).
thread_local MPI_Comm t_comm = MPI_COMM_WORLD;
MPI_Comm world() { return t_comm; }

class UseComm {
 public:
  explicit UseComm(Comm c) : saved_(t_comm) { t_comm = c.fortran ? MPI_Comm_f2c(*c.fortran) : MPI_COMM_WORLD; }
  ~UseComm() { t_comm = saved_; }
  UseComm(const UseComm&) = delete;
  UseComm& operator=(const UseComm&) = delete;

 private:
  MPI_Comm saved_;
};

int comm_rank() {
  int r = 0;
  MPI_Comm_rank(world(), &r);
  return r;
}

int comm_size() {
  int s = 1;
  MPI_Comm_size(world(), &s);
  return s;
}

void collective(const std::function<void()>& fn);

// The exceptions collective() throws on every rank.
template <class Base>
struct Agreed final : Base, AgreedError {
  using Base::Base;
};

// Sums over ranks, delivered bit-identical to every rank: reduced on rank 0 and broadcast. (An
// all-reduce may add in a different order on different ranks; the ranks' centroids, and the
// decisions taken from them, must not differ by a rounding.) In pieces: MPI counts are int.
void allreduce_sum(double* data, std::size_t n) {
  constexpr std::size_t kPiece = std::size_t{1} << 28;
  const bool root = comm_rank() == 0;
  for (std::size_t i = 0; i < n; i += kPiece) {
    const int m = static_cast<int>(std::min(kPiece, n - i));
    MPI_Reduce(root ? MPI_IN_PLACE : data + i, root ? data + i : nullptr, m, MPI_DOUBLE, MPI_SUM, 0, world());
    MPI_Bcast(data + i, m, MPI_DOUBLE, 0, world());
  }
}

std::uint64_t allreduce_u64(std::uint64_t v, MPI_Op op) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, op, world());
  return v;
}

// Every rank's vector of doubles, concatenated in rank order, on every rank.
std::vector<double> allgather(const std::vector<double>& mine) {
  const int n = comm_size();
  // Counts and displacements are int in MPI: refuse (on every rank alike) what does not fit.
  if (allreduce_u64(mine.size(), MPI_SUM) > static_cast<std::uint64_t>(INT_MAX)) {
    throw Agreed<InvalidArgument>("the ranks' candidate rows exceed one MPI message (2^31 values); "
                                  "use fewer centroids for k-means++ or --init random");
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, world());
  int total = 0;
  for (int r = 0; r < n; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, world());
  return all;
}

// Exact sums (detail::ExactSum) over ranks: merged limb by limb with carries by a
// user-defined reduction, so every rank gets the same exact sum whatever the order of merging.
constexpr int kLimbs = static_cast<int>(detail::ExactSum::kLimbs);

void merge_exact(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint64_t*>(in);
  auto* b = static_cast<std::uint64_t*>(inout);
  for (int e = 0; e < *len; ++e) {
    detail::ExactSum s;
    s.merge(b + static_cast<std::ptrdiff_t>(e) * kLimbs);
    s.merge(a + static_cast<std::ptrdiff_t>(e) * kLimbs);
    std::copy(s.limbs().begin(), s.limbs().end(), b + static_cast<std::ptrdiff_t>(e) * kLimbs);
  }
}

void allreduce_exact(std::vector<detail::ExactSum>& acc) {
  static MPI_Datatype type = [] {
    MPI_Datatype t;
    MPI_Type_contiguous(kLimbs, MPI_UINT64_T, &t);
    MPI_Type_commit(&t);
    return t;
  }();
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&merge_exact, 1, &o);
    return o;
  }();
  std::vector<std::uint64_t> buf(acc.size() * kLimbs);
  for (std::size_t i = 0; i < acc.size(); ++i) std::copy(acc[i].limbs().begin(), acc[i].limbs().end(), buf.begin() + static_cast<std::ptrdiff_t>(i * kLimbs));
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  for (std::size_t i = 0; i < acc.size(); i += kPiece) {
    const int m = static_cast<int>(std::min(kPiece, acc.size() - i));
    MPI_Allreduce(MPI_IN_PLACE, buf.data() + i * kLimbs, m, type, op, world());
  }
  for (std::size_t i = 0; i < acc.size(); ++i) {
    acc[i] = detail::ExactSum();
    acc[i].merge(buf.data() + i * kLimbs);
  }
}

std::logic_error no_shard_seeding() {
  return std::logic_error("flashkm internal error: k-means++ over MPI shards (the MPI engine seeds on a gathered sample)");
}

template <class T>
class MpiEngine final : public detail::Engine<T> {
 public:
  // Collective. `make_local(row_offset)` builds the CPU engine over this rank's shard.
  template <class Make>
  MpiEngine(std::size_t local_rows, std::size_t cols, int n_threads, const std::string& target, Make&& make_local)
      : n_(local_rows), threads_(n_threads), target_(target) {
    std::uint64_t before = 0;
    std::uint64_t mine = local_rows;
    MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, world());
    offset_ = comm_rank() == 0 ? 0 : before;
    total_ = allreduce_u64(mine, MPI_SUM);
    collective([&] {
      if (local_rows == 0) {
        throw InvalidArgument("this rank's shard has no rows (" + std::to_string(total_) + " rows over " +
                              std::to_string(comm_size()) + " ranks); every rank needs at least one");
      }
      local_ = make_local(offset_);
    });
    // Centre every shard on the global column means, from exact column sums: the same bits for
    // any number of ranks (k-means|| seeds, which depend on the centring, are bitwise the same
    // for any split of the rows).
    const std::size_t dim = cols;
    std::vector<detail::ExactSum> sums(dim);
    collective([&] { local_->column_sums(sums); });
    allreduce_exact(sums);
    std::vector<double> mean(dim);
    for (std::size_t j = 0; j < dim; ++j) mean[j] = sums[j].value() / static_cast<double>(total_);
    local_->set_mean(mean.data());
  }

  std::size_t rows() const override { return n_; }
  std::size_t total_rows() const override { return total_; }
  std::size_t cols() const override { return local_->cols(); }
  const double* shift() const override { return local_->shift(); }
  const char* target() const override { return local_->target(); }
  const double* weights() const override { return local_->weights(); }
  void row_centred(std::size_t i, double* out) override { local_->row_centred(i, out); }
  const double* mean() const override { return local_->mean(); }
  void set_mean(const double* mean) override { local_->set_mean(mean); }

  double mean_variance() override {
    double v = 0;
    collective([&] { v = local_->mean_variance() * static_cast<double>(n_); });
    allreduce_sum(&v, 1);
    return v / static_cast<double>(total_);
  }

  void set_centroids(const double* centroids, std::size_t k) override { local_->set_centroids(centroids, k); }
  Metric metric() const override { return local_->metric(); }
  double total_weight() override {
    double w = local_->total_weight();
    allreduce_sum(&w, 1);
    return w;
  }

  std::size_t assign(std::int32_t* labels, T* dist) override {
    std::uint64_t changed = 0;
    collective([&] { changed = local_->assign(labels, dist); });
    return allreduce_u64(changed, MPI_SUM);
  }

  void lower_closest(const double* centroid, T* closest) override {
    collective([&] { local_->lower_closest(centroid, closest); });
  }

  void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) override {
    collective([&] { local_->potentials(candidates, m, closest, pot); });
    allreduce_sum(pot, m);
  }

  // The driver's k-means++ never runs over the shards (initial_centroids seeds on a gathered
  // sample with a local engine); its k-means|| does: every shard keeps its rows' closest
  // distances, and the draws, potentials and weights are combined exactly over the ranks.
  void set_seed_sketch(bool on) override { local_->set_seed_sketch(on); }
  double seed_start(const double* centre, std::size_t k) override {
    collective([&] { local_->seed_start(centre, k); });
    return 0;  // k-means|| takes its potential from seed_potential
  }
  std::vector<std::size_t> seed_draw(const std::vector<double>&) override { throw no_shard_seeding(); }
  void seed_potentials(const double*, std::size_t, double*) override { throw no_shard_seeding(); }
  void seed_keep(std::size_t) override { throw no_shard_seeding(); }
  detail::SeedPick seed_first(std::uint64_t key) override {
    // Every rank's best (key, index, row); the largest key wins, lowest index on ties.
    const std::size_t dim = cols();
    std::vector<double> packed;
    collective([&] {
      detail::SeedPick p = local_->seed_first(key);
      packed.push_back(p.key);
      packed.push_back(static_cast<double>(p.index));
      p.row.resize(dim, 0.0);
      packed.insert(packed.end(), p.row.begin(), p.row.end());
    });
    const std::vector<double> all = allgather(packed);
    detail::SeedPick best;
    const std::size_t rec = 2 + dim;
    for (std::size_t r = 0; r < all.size() / rec; ++r) {
      const double key_r = all[r * rec];
      const auto index = static_cast<std::uint64_t>(all[r * rec + 1]);
      if (key_r > best.key || (key_r == best.key && key_r > -std::numeric_limits<double>::infinity() && index < best.index)) {
        best.key = key_r;
        best.index = index;
        best.row.assign(all.begin() + static_cast<std::ptrdiff_t>(r * rec + 2),
                        all.begin() + static_cast<std::ptrdiff_t>((r + 1) * rec));
      }
    }
    return best;
  }
  void seed_potential(detail::ExactSum& acc) override {
    std::vector<detail::ExactSum> mine(1);
    collective([&] { local_->seed_potential(mine[0]); });
    allreduce_exact(mine);
    acc.merge(mine[0]);
  }
  std::vector<double> seed_oversample(double l, double psi, std::uint64_t key) override {
    std::vector<double> rows;
    collective([&] { rows = local_->seed_oversample(l, psi, key); });
    return allgather(rows);  // rank order is row order
  }
  void seed_add_many(const double* centres, std::size_t m) override {
    collective([&] { local_->seed_add_many(centres, m); });
  }
  void seed_owner_weights(std::vector<detail::ExactSum>& acc) override {
    std::vector<detail::ExactSum> mine(acc.size());
    collective([&] { local_->seed_owner_weights(mine); });
    allreduce_exact(mine);
    for (std::size_t c = 0; c < acc.size(); ++c) acc[c].merge(mine[c]);
  }
  std::uint64_t seed_distances() const override { return local_->seed_distances(); }
  const char* update_path() const override { return local_->update_path(); }
  void seed_end() override { local_->seed_end(); }
  void column_sums(std::vector<detail::ExactSum>& acc) override {
    std::vector<detail::ExactSum> mine(acc.size());
    collective([&] { local_->column_sums(mine); });
    allreduce_exact(mine);
    for (std::size_t j = 0; j < acc.size(); ++j) acc[j].merge(mine[j]);
  }

  void sqdistances(T* out) override {
    collective([&] { local_->sqdistances(out); });
  }

  double update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                double* wsums) override {
    double inertia = 0;
    collective([&] { inertia = local_->update(labels, centroids, k, sums, wsums); });
    return reduce_step(k, sums, wsums, inertia, nullptr);
  }

  double assign_update(const double* centroids, std::size_t k, double* sums, double* wsums,
                       std::size_t* changed) override {
    double inertia = 0;
    collective([&] { inertia = local_->assign_update(centroids, k, sums, wsums, changed); });
    return reduce_step(k, sums, wsums, inertia, changed);
  }

  bool begin_run(Prune prune, std::size_t k) override {
    bool on = false;
    collective([&] { on = local_->begin_run(prune, k); });
    return on;
  }

  std::uint64_t last_distances() const override { return distances_; }

  const std::int32_t* labels() const override { return local_->labels(); }

  std::vector<detail::FarPoint> farthest(std::size_t m) override {
    const std::size_t dim = cols();
    std::vector<detail::FarPoint> mine;
    collective([&] { mine = local_->farthest(std::min(m, n_)); });
    // Record: dist, index, label, weight, row (indices < 2^53 are exact in a double).
    const std::size_t rec = 4 + dim;
    std::vector<double> packed;
    packed.reserve(mine.size() * rec);
    for (const auto& p : mine) {
      packed.push_back(p.dist);
      packed.push_back(static_cast<double>(p.index));
      packed.push_back(static_cast<double>(p.label));
      packed.push_back(p.weight);
      packed.insert(packed.end(), p.row.begin(), p.row.end());
    }
    const std::vector<double> all = allgather(packed);
    std::vector<detail::FarPoint> merged(all.size() / rec);
    for (std::size_t t = 0; t < merged.size(); ++t) {
      const double* r = all.data() + t * rec;
      merged[t].dist = r[0];
      merged[t].index = static_cast<std::uint64_t>(r[1]);
      merged[t].label = static_cast<std::int32_t>(r[2]);
      merged[t].weight = r[3];
      merged[t].row.assign(r + 4, r + rec);
    }
    std::sort(merged.begin(), merged.end(), [](const detail::FarPoint& a, const detail::FarPoint& b) {
      return a.dist > b.dist || (a.dist == b.dist && a.index < b.index);
    });
    if (merged.size() > m) merged.resize(m);
    return merged;
  }

  bool agree(bool yes) override {
    int v = yes ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, world());
    return v != 0;
  }

  // k-means++ on a gathered sample of max(64 K, 65,536) rows: beyond K = 1024 the sample and
  // its greedy seeding grow with K on every rank, and k-means|| over the shards takes over.
  InitMethod seeding_for(InitMethod method, std::size_t k) const override {
    return method == InitMethod::kMeansPlusPlus && kSamplePerCentre * k > kMinSampleRows ? InitMethod::kMeansParallel
                                                                                          : method;
  }

  std::vector<double> initial_centroids(InitMethod method, std::size_t k, std::mt19937_64& rng,
                                        detail::SeedProgress* progress) override {
    // k-means|| runs in the driver over the shards (seed_first ... seed_owner_weights).
    if (method == InitMethod::kMeansParallel) return {};
    return method == InitMethod::kRandom ? init_random(k, rng) : init_kmeanspp_sample(k, rng, progress);
  }

 private:
  // One all-reduce per Lloyd step: sums (K x D), weights (K), inertia, labels changed.
  double reduce_step(std::size_t k, double* sums, double* wsums, double inertia, std::size_t* changed) {
    const std::size_t dim = cols();
    buf_.resize(k * dim + k + 3);
    std::copy(sums, sums + k * dim, buf_.begin());
    std::copy(wsums, wsums + k, buf_.begin() + static_cast<std::ptrdiff_t>(k * dim));
    buf_[k * dim + k] = inertia;
    buf_[k * dim + k + 1] = changed ? static_cast<double>(*changed) : 0.0;
    // Distances computed (integers below 2^53 add exactly in a double).
    buf_[k * dim + k + 2] = static_cast<double>(local_->last_distances());
    allreduce_sum(buf_.data(), buf_.size());
    distances_ = static_cast<std::uint64_t>(buf_[k * dim + k + 2]);
    std::copy(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(k * dim), sums);
    std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(k * dim), buf_.begin() + static_cast<std::ptrdiff_t>(k * dim + k), wsums);
    if (changed) *changed = static_cast<std::size_t>(buf_[k * dim + k + 1]);
    return buf_[k * dim + k];
  }

  // The single-process random init (Efraimidis-Spirakis keys from one generator stream over all
  // rows in order): each rank skips to its first row's draw, keeps its k best keys, and the
  // k best of all ranks win -- exactly the rows one process would draw.
  std::vector<double> init_random(std::size_t k, std::mt19937_64& rng) {
    const std::size_t dim = cols();
    const double* w = weights();
    std::vector<std::pair<double, std::size_t>> keys;
    std::uint64_t positive = 0;
    collective([&] {
      std::mt19937_64 mine = rng;
      mine.discard(offset_);
      keys = detail::sampling_keys(w, n_, mine, &positive);
    });
    rng.discard(total_);
    detail::check_positive_rows(allreduce_u64(positive, MPI_SUM), k);
    const std::size_t keep = std::min(k, n_);
    detail::sort_best_keys(keys, keep);
    std::vector<double> packed;
    collective([&] {  // streamed shards read these rows from their files
      std::vector<double> row(dim);
      for (std::size_t t = 0; t < keep; ++t) {
        packed.push_back(keys[t].first);
        packed.push_back(static_cast<double>(offset_ + keys[t].second));
        row_centred(keys[t].second, row.data());
        packed.insert(packed.end(), row.begin(), row.end());
      }
    });
    const std::vector<double> all = allgather(packed);
    const std::size_t rec = 2 + dim;
    std::vector<std::pair<double, std::size_t>> best(all.size() / rec);
    for (std::size_t t = 0; t < best.size(); ++t) best[t] = {all[t * rec], t};
    std::sort(best.begin(), best.end(), [&](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && all[a.second * rec + 1] < all[b.second * rec + 1]);
    });
    std::vector<double> centroids(k * dim);
    for (std::size_t c = 0; c < k; ++c) {
      std::copy_n(all.data() + best[c].second * rec + 2, dim, centroids.data() + c * dim);
    }
    return centroids;
  }

  // Greedy k-means++ on every stride-th row of the whole data set (all rows when N is small),
  // gathered on every rank, which all run the same seeding and agree without a broadcast.
  std::vector<double> init_kmeanspp_sample(std::size_t k, std::mt19937_64& rng, detail::SeedProgress* progress) {
    const std::size_t dim = cols();
    const std::size_t want = std::max(kMinSampleRows, kSamplePerCentre * k);
    const std::size_t stride = (total_ + want - 1) / want;
    const double* w = weights();
    std::vector<double> packed;
    collective([&] {
      std::vector<double> row(dim);
      for (std::size_t g = (offset_ + stride - 1) / stride * stride; g < offset_ + n_; g += stride) {
        row_centred(g - offset_, row.data());
        packed.push_back(w ? w[g - offset_] : 1.0);
        packed.insert(packed.end(), row.begin(), row.end());
      }
    });
    const std::vector<double> all = allgather(packed);
    const std::size_t rec = 1 + dim;
    const std::size_t m = all.size() / rec;
    // The sample back in X's own type and coordinates (x - shift + shift is exact: both in T).
    std::vector<T> sample(m * dim);
    std::vector<double> sw(m);
    bool weighted = false;
    for (std::size_t i = 0; i < m; ++i) {
      sw[i] = all[i * rec];
      weighted |= sw[i] != 1.0;
      for (std::size_t j = 0; j < dim; ++j) sample[i * dim + j] = static_cast<T>(all[i * rec + 1 + j] + shift()[j]);
    }
    auto engine = detail::make_engine<T>(MatrixView<T>(sample.data(), m, dim),
                                             weighted ? std::span<const double>(sw) : std::span<const double>(),
                                             threads_, target_);
    // Every rank seeds the same sample alike; each one's progress hears its own steps.
    std::vector<double> c = detail::init_kmeanspp(*engine, k, rng, {progress});
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = 0; j < dim; ++j) c[i * dim + j] += engine->shift()[j] - shift()[j];
    }
    return c;
  }

  std::unique_ptr<detail::Engine<T>> local_;
  std::size_t n_;
  std::size_t offset_ = 0;
  std::size_t total_ = 0;
  int threads_;
  std::string target_;
  std::vector<double> buf_;
  std::uint64_t distances_ = 0;  // distances computed by the last assign_update, all ranks
};

// Weights of a shard: finite and >= 0 here, not all zero over all ranks.
void check_shard_weights(std::span<const double> w, std::size_t n) {
  collective([&] {
    if (w.empty()) return;
    if (w.size() != n) {
      throw InvalidArgument("sample_weight has " + std::to_string(w.size()) + " values for a shard of " +
                            std::to_string(n) + " rows");
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(w[i]) || w[i] < 0) {
        throw InvalidData("sample_weight[" + std::to_string(i) + "] of this shard = " + std::to_string(w[i]) +
                          "; weights must be finite and >= 0");
      }
    }
  });
  int any = w.empty() ? 1 : 0;
  for (double v : w) any |= v > 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_LOR, world());
  if (!any) throw InvalidData("sample_weight is zero for every row of every shard");
}

template <class T, class Make>
KMeansResult<T> fit_sharded(std::size_t local_rows, std::size_t cols, const KMeansOptions& options, Make&& make_local) {
  std::uint64_t total = allreduce_u64(local_rows, MPI_SUM);
  std::uint64_t max_cols = allreduce_u64(cols, MPI_MAX);
  std::uint64_t min_cols = allreduce_u64(cols, MPI_MIN);
  if (max_cols != min_cols) {
    throw InvalidArgument("shards have different numbers of columns (" + std::to_string(min_cols) + " to " +
                          std::to_string(max_cols) + ")");
  }
  detail::check_options(options, total, cols, std::is_same_v<T, float>);
  check_shard_weights(options.sample_weight, local_rows);
  auto engine = std::make_unique<MpiEngine<T>>(local_rows, cols, options.n_threads, options.target, make_local);
  return detail::fit_engine<T>(std::move(engine), options);
}


void collective(const std::function<void()>& fn) {
  int code = 0;
  std::string msg;
  try {
    fn();
  } catch (const InvalidArgument& e) {
    code = 1;
    msg = e.what();
  } catch (const InvalidData& e) {
    code = 2;
    msg = e.what();
  } catch (const Error& e) {
    code = 3;
    msg = e.what();
  } catch (const std::exception& e) {
    code = 4;
    msg = e.what();
  }
  int first = code ? comm_rank() : INT_MAX;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, world());
  if (first == INT_MAX) return;
  int header[2] = {code, static_cast<int>(msg.size())};
  MPI_Bcast(header, 2, MPI_INT, first, world());
  msg.resize(static_cast<std::size_t>(header[1]));
  MPI_Bcast(msg.data(), header[1], MPI_CHAR, first, world());
  const std::string text = "rank " + std::to_string(first) + ": " + msg;
  if (header[0] == 1) throw Agreed<InvalidArgument>(text);
  if (header[0] == 2) throw Agreed<InvalidData>(text);
  throw Agreed<Error>(text);
}

}  // namespace

Environment::Environment(int* argc, char*** argv) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    owner_ = true;
  }
}

Environment::~Environment() {
  int done = 0;
  MPI_Finalized(&done);
  if (owner_ && !done) MPI_Finalize();
}

int rank(Comm comm) {
  UseComm use(comm);
  return comm_rank();
}

int size(Comm comm) {
  UseComm use(comm);
  return comm_size();
}

int ranks_on_this_node(Comm comm) {
  UseComm use(comm);
  MPI_Comm node;
  MPI_Comm_split_type(world(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

std::pair<std::size_t, std::size_t> shard_range(std::size_t total, Comm comm) {
  UseComm use(comm);
  const std::size_t p = static_cast<std::size_t>(comm_size());
  const std::size_t r = static_cast<std::size_t>(comm_rank());
  return {total * r / p, total * (r + 1) / p};
}

void collectively(const std::function<void()>& fn, Comm comm) {
  UseComm use(comm);
  collective(fn);
}

void abort(int code, Comm comm) {
  UseComm use(comm);
  MPI_Abort(world(), code);
  std::abort();
}

template <class T>
KMeansResult<T> fit(MatrixView<T> shard, const KMeansOptions& options, Comm comm) {
  UseComm use(comm);
  collective([&] {
    if (shard.rows > 0) detail::check_view(shard, "X (this rank's shard)");
  });
  return fit_sharded<T>(shard.rows, shard.cols, options, [&](std::size_t offset) {
    return detail::make_engine<T>(shard, options.sample_weight, options.n_threads, options.target, offset,
                                  options.metric);
  });
}

template <class T>
KMeansResult<T> fit(RowSource<T>& shard, const KMeansOptions& options, Comm comm) {
  UseComm use(comm);
  return fit_sharded<T>(shard.rows(), shard.cols(), options, [&](std::size_t offset) {
    return detail::make_engine<T>(shard, options.sample_weight, options.n_threads, options.target, offset,
                                  options.metric);
  });
}

std::vector<std::int32_t> gather_to_root(const std::vector<std::int32_t>& local, Comm comm) {
  UseComm use(comm);
  const int n = comm_size();
  if (allreduce_u64(local.size(), MPI_SUM) > static_cast<std::uint64_t>(INT_MAX)) {
    throw Agreed<InvalidArgument>("more than 2^31 labels cannot be gathered on rank 0");
  }
  const int mine = static_cast<int>(local.size());
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world());
  std::vector<std::int32_t> all;
  if (comm_rank() == 0) {
    long long total = 0;
    for (int r = 0; r < n; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(local.data(), mine, MPI_INT32_T, all.data(), counts.data(), displs.data(), MPI_INT32_T, 0, world());
  return all;
}

template KMeansResult<float> fit<float>(MatrixView<float>, const KMeansOptions&, Comm);
template KMeansResult<double> fit<double>(MatrixView<double>, const KMeansOptions&, Comm);
template KMeansResult<float> fit<float>(RowSource<float>&, const KMeansOptions&, Comm);
template KMeansResult<double> fit<double>(RowSource<double>&, const KMeansOptions&, Comm);

}  // namespace flashkm::mpi
