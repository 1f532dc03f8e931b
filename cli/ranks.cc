#include "ranks.hpp"

#include <cstdio>

#include "errors.hpp"
#include "memory.hpp"
#ifdef FLASHKM_HAVE_MPI
#include "flashkm/distributed.hpp"
#endif

namespace flashkm::cli {
namespace {

class SingleProcess final : public Ranks {
 public:
  bool distributed() const override { return false; }
  bool root() const override { return true; }
  int count() const override { return 1; }
  void together(const std::function<void()>& fn) const override { fn(); }
  std::pair<std::size_t, std::size_t> my_rows(std::size_t n) const override { return {0, n}; }
  std::size_t default_memory_limit() const override { return half_available_memory(); }
  KMeansResult<float> fit(MatrixView<float> X, const KMeansOptions& o) const override { return flashkm::fit(X, o); }
  KMeansResult<double> fit(MatrixView<double> X, const KMeansOptions& o) const override { return flashkm::fit(X, o); }
  KMeansResult<float> fit(RowSource<float>& X, const KMeansOptions& o) const override { return flashkm::fit(X, o); }
  KMeansResult<double> fit(RowSource<double>& X, const KMeansOptions& o) const override { return flashkm::fit(X, o); }
  std::vector<std::int32_t> gather_labels(std::vector<std::int32_t> mine) const override { return mine; }
  int fail(std::exception_ptr error) const override { return report_error(error, true); }
};

#ifdef FLASHKM_HAVE_MPI
class MpiRanks final : public Ranks {
 public:
  MpiRanks(int* argc, char*** argv) : env_(argc, argv) {}
  bool distributed() const override { return true; }
  bool root() const override { return mpi::rank() == 0; }
  int count() const override { return mpi::size(); }
  void together(const std::function<void()>& fn) const override { mpi::collectively(fn); }
  std::pair<std::size_t, std::size_t> my_rows(std::size_t n) const override { return mpi::shard_range(n); }
  std::size_t default_memory_limit() const override {
    return half_available_memory() / static_cast<std::size_t>(mpi::ranks_on_this_node());
  }
  KMeansResult<float> fit(MatrixView<float> X, const KMeansOptions& o) const override { return mpi::fit(X, o); }
  KMeansResult<double> fit(MatrixView<double> X, const KMeansOptions& o) const override { return mpi::fit(X, o); }
  KMeansResult<float> fit(RowSource<float>& X, const KMeansOptions& o) const override { return mpi::fit(X, o); }
  KMeansResult<double> fit(RowSource<double>& X, const KMeansOptions& o) const override { return mpi::fit(X, o); }
  std::vector<std::int32_t> gather_labels(std::vector<std::int32_t> mine) const override {
    return mpi::gather_to_root(mine);
  }
  int fail(std::exception_ptr error) const override {
    try {
      std::rethrow_exception(error);
    } catch (const mpi::AgreedError&) {
      return report_error(error, root());  // every rank threw it together; one prints it
    } catch (...) {
    }
    std::fprintf(stderr, "flashkm: rank %d of %d failed alone; ending the job\n", mpi::rank(), mpi::size());
    mpi::abort(report_error(error, true));
  }

 private:
  mpi::Environment env_;
};
#endif

}  // namespace

std::unique_ptr<Ranks> single_process() { return std::make_unique<SingleProcess>(); }

std::unique_ptr<Ranks> mpi_ranks(int* argc, char*** argv) {
#ifdef FLASHKM_HAVE_MPI
  return std::make_unique<MpiRanks>(argc, argv);
#else
  (void)argc;
  (void)argv;
  throw UsageError("--distributed: this flashkm was built without MPI (install libopenmpi-dev and rebuild)");
#endif
}

}  // namespace flashkm::cli
