// The CPU backend's side of src/core/backend.hpp: the one factory of engines (dense, streamed,
// sparse), targets, chunk granules and 16-bit targets.
#include "core/backend.hpp"

#include "cpu/amx.hpp"
#include "cpu/cpu_engine.hpp"
#include "cpu/sparse_engine.hpp"

namespace flashkm::detail {

template <class T>
std::unique_ptr<Engine<T>> make_engine(MatrixView<T> X, std::span<const double> weights, int n_threads,
                                       const std::string& target, std::size_t row_offset, Metric metric) {
  return make_cpu_engine(X, weights, n_threads, target, row_offset, metric);
}

template <class T>
std::unique_ptr<Engine<T>> make_engine(RowSource<T>& source, std::span<const double> weights, int n_threads,
                                       const std::string& target, std::size_t row_offset, Metric metric) {
  return make_cpu_engine(source, weights, n_threads, target, row_offset, metric);
}

template <class T>
std::unique_ptr<Engine<T>> make_engine(CsrView<T> X, std::span<const double> weights, int n_threads,
                                       const std::string& target, Metric metric) {
  return make_sparse_engine(X, weights, n_threads, target, metric);
}

std::size_t granule(std::size_t cols, std::size_t elem_size) { return cpu_granule(cols, elem_size); }

std::vector<std::string> target_names() { return cpu_target_names(); }

std::string default_target_name() { return cpu_default_target(); }

std::vector<std::string> half_target_names() {
  std::vector<std::string> out;
  if (amx_usable()) out.emplace_back(kAmxTargetName);
  for (auto& t : cpu_target_names()) out.push_back(std::move(t));
  if (avx512bf16_usable()) out.emplace_back(kDpbf16TargetName);
  return out;
}

#define FLASHKM_INSTANTIATE(T)                                                                                      \
  template std::unique_ptr<Engine<T>> make_engine<T>(MatrixView<T>, std::span<const double>, int,                \
                                                     const std::string&, std::size_t, Metric);                   \
  template std::unique_ptr<Engine<T>> make_engine<T>(RowSource<T>&, std::span<const double>, int,                \
                                                     const std::string&, std::size_t, Metric);                   \
  template std::unique_ptr<Engine<T>> make_engine<T>(CsrView<T>, std::span<const double>, int, const std::string&, \
                                                     Metric);
FLASHKM_INSTANTIATE(float)
FLASHKM_INSTANTIATE(double)
#undef FLASHKM_INSTANTIATE

}  // namespace flashkm::detail
