// FlashAssign's driver in the CPU engine: rows in parallel tasks to the target's panel kernels,
// or to AMX tiles / AVX-512-BF16 for 16-bit rows (bitwise the same labels and distances).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/cpu_engine_impl.hpp"

namespace flashkm::detail {

template <class T>
std::size_t CpuEngine<T>::assign(std::int32_t* labels, T* dist) {
  std::size_t changed = 0;
  for_each_chunk([&](const Chunk<T>& ch) { changed += assign_chunk(ch, 0, ch.x.rows, labels, dist); });
  return changed;
}

template <class T>
void CpuEngine<T>::sqdistances(T* out) {
  for_each_chunk([&](const Chunk<T>& ch) {
    T* o = out + ch.first * k_;
    for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
      panel_->sqdist_rows(ch.pts, packed_.data(), k_, r0, r1, o + r0 * k_, k_);
    });
  });
}

// FlashAssign over rows [r0, r1) of a chunk; labels and dist are indexed by global row.
template <class T>
std::size_t CpuEngine<T>::assign_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels,
                                       T* dist) {
  std::size_t changed = 0;
  std::int32_t* lab = labels + ch.first;
  T* dst = dist + ch.first;
  for_row_tasks(r0, r1, [&](std::size_t a, std::size_t b) {
    const std::size_t c = assign_rows(ch.pts, a, b, lab, dst);
#pragma omp atomic
    changed += c;
  });
  return changed;
}

// FlashAssign over rows [a, b) of a chunk on one thread, by the engine's provider
// (assign_provider.hpp): the SIMD target's panels, or AMX tiles / AVX-512-BF16 for 16-bit rows
// (bitwise the same labels and distances).
template <class T>
std::size_t CpuEngine<T>::assign_rows(const PointsRef<T>& pts, std::size_t a, std::size_t b, std::int32_t* lab,
                                      T* dst) {
  return provider_->assign_rows(pts, a, b, lab, dst);
}

template std::size_t CpuEngine<float>::assign(std::int32_t*, float*);
template void CpuEngine<float>::sqdistances(float*);
template std::size_t CpuEngine<float>::assign_chunk(const Chunk<float>&, std::size_t, std::size_t, std::int32_t*,
                                                    float*);
template std::size_t CpuEngine<float>::assign_rows(const PointsRef<float>&, std::size_t, std::size_t, std::int32_t*,
                                                   float*);
template std::size_t CpuEngine<double>::assign(std::int32_t*, double*);
template void CpuEngine<double>::sqdistances(double*);
template std::size_t CpuEngine<double>::assign_chunk(const Chunk<double>&, std::size_t, std::size_t, std::int32_t*,
                                                     double*);
template std::size_t CpuEngine<double>::assign_rows(const PointsRef<double>&, std::size_t, std::size_t, std::int32_t*,
                                                    double*);

}  // namespace flashkm::detail
