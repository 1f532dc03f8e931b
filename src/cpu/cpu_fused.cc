// The CPU engine's fused step for small K (docs/KERNELS.md, "The fused step"): each tile of rows
// is assigned and reduced by a tile-local Sort-Inverse Update while it is still in L2.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/cpu_engine_impl.hpp"

namespace flashkm::detail {

// The fused step pays K x D partial sums per tile; worth it while they are at most a quarter
// of the tile's own bytes (K up to 1024 at D = 32 float, 32 at D = 784).
template <class T>
bool CpuEngine<T>::fused_fits(std::size_t k) const {
  const std::size_t tr = fused_tile_rows(row_bytes_);
  return k * sizeof(double) * 4 <= tr * sizeof(T) && n_ >= 2 * tr;
}

// Rows per tile of the fused step: fused_tile_rows, halved (down to 1024 rows, and while the
// K x D partials stay within a quarter of the tile) while the rows would make fewer than 16
// tiles, so that a small data set still spreads over the threads (50,000 x 16 made 4 tiles of
// 16,384 rows, the last of 848: one thread took two whole tiles while the other idled). It
// depends on N, K and the row's size only, never on the thread count; a power of two, so the
// bounded blocks and a streamed chunk's super-blocks still hold whole tiles.
template <class T>
std::size_t CpuEngine<T>::fused_tile(std::size_t k) const {
  std::size_t tr = fused_tile_rows(row_bytes_);
  while (tr > 1024 && (n_ + tr - 1) / tr < 16 && k * sizeof(double) * 4 <= tr / 2 * sizeof(T)) tr /= 2;
  return tr;
}

// FlashAssign and a tile-local Sort-Inverse Update in one pass over a chunk: each tile of rows
// is assigned, its labels counting-sorted into runs (the tile's inverse mapping) and the runs
// reduced from cache into the tile's partial sums; partials are added in tile order. Tiles go
// in waves (one parallel region each) holding max(4 MiB, two tiles per thread) of partials.
// Tiles' inertias are added to *inertia one by one in tile order, as if all chunks were one.
template <class T>
void CpuEngine<T>::assign_update_tiled(const Chunk<T>& ch, std::size_t k, std::int32_t* labels, T* dist,
                                       double* sums, double* wsums, double* qsums, double* inertia,
                                       std::size_t* changed, bool accumulate) {
  const std::size_t n = ch.x.rows;
  const std::size_t dim = dim_;
  const std::size_t tr = fused_tile(k);
  const std::size_t ntiles = (n + tr - 1) / tr;
  // A wave is one parallel region: as many tiles as 4 MiB of partials hold, at least two per
  // thread (a wave per two tiles per thread made ~70 regions per iteration at Fashion-MNIST
  // K = 10, whose thread wake-ups cost ~10% of a pruned fit). The sums are added in tile order
  // whatever the wave, so the bits do not depend on it.
  const std::size_t per_tile = std::max<std::size_t>(1, k * dim * sizeof(double));
  const std::size_t wave = std::min(std::max<std::size_t>(2 * static_cast<std::size_t>(threads_), (std::size_t{4} << 20) / per_tile),
                                    std::max<std::size_t>(ntiles, 1));
  std::int32_t* lab = labels + ch.first;
  T* dst = dist + ch.first;
  const double* wts = run_.lloyd_w(ch.first);
  part_sum_.assign(wave * k * dim, 0.0);
  part_w_.assign(wave * k, 0.0);
  part_q_.assign(wave * k, 0.0);
  std::vector<double> tile_inertia(wave);
  std::vector<std::size_t> tile_changed(wave);
  for (std::size_t t0 = 0; t0 < ntiles; t0 += wave) {
    const std::size_t nw = std::min(wave, ntiles - t0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<std::uint32_t> off(k + 1), perm(tr);
      std::vector<double> sq(dim);
      BoundScratch dummy;
      BoundScratch& bs = iter_bounded_ ? bound_scratch() : dummy;
      BoundCounts bc;
#pragma omp for schedule(dynamic, 1)
      for (std::size_t w = 0; w < nw; ++w) {
        const std::size_t r0 = (t0 + w) * tr;
        const std::size_t r1 = std::min(n, r0 + tr);
        tile_changed[w] = iter_bounded_ ? bounded_rows(ch, r0, r1, lab, dst, bs, bc)
                                        : assign_rows(ch.pts, r0, r1, lab, dst);
        if (!accumulate) continue;
        std::fill(off.begin(), off.end(), 0u);
        for (std::size_t i = r0; i < r1; ++i) ++off[static_cast<std::size_t>(lab[i]) + 1];
        for (std::size_t c = 0; c < k; ++c) off[c + 1] += off[c];
        std::vector<std::uint32_t> next(off.begin(), off.end() - 1);
        // Run indices are local to the tile (the kernel sees the tile's rows from 0).
        for (std::size_t i = r0; i < r1; ++i) perm[next[lab[i]]++] = static_cast<std::uint32_t>(i - r0);
        double* ps = part_sum_.data() + w * k * dim;
        double* pw = part_w_.data() + w * k;
        double* pq = part_q_.data() + w * k;
        std::fill(ps, ps + k * dim, 0.0);
        std::fill(pw, pw + k, 0.0);
        std::fill(pq, pq + k, 0.0);
        const std::size_t len = r1 - r0;
        const PointsRef<T> tile{ch.x.row(r0), ch.x.stride, dim, shift_t_.data()};
        double acc = 0;
        for (std::size_t c = 0; c < k; ++c) {
          if (off[c + 1] == off[c]) continue;
          std::fill(sq.begin(), sq.end(), 0.0);
          table_->accumulate_run(tile, perm.data() + off[c], off[c + 1] - off[c], len - off[c],
                                 wts ? wts + r0 : nullptr, abs_centroids_.data() + c * dim,
                                 ps + c * dim, pw + c, sq.data());
          double q = 0;
          for (std::size_t j = 0; j < dim; ++j) q += sq[j];
          pq[c] = q;
          acc += q;
        }
        tile_inertia[w] = acc;
      }
      if (accumulate) {
#pragma omp for schedule(static)
        for (std::size_t c = 0; c < k; ++c) {
          for (std::size_t w = 0; w < nw; ++w) {
            const double* p = part_sum_.data() + (w * k + c) * dim;
            for (std::size_t j = 0; j < dim; ++j) sums[c * dim + j] += p[j];
            wsums[c] += part_w_[w * k + c];
            qsums[c] += part_q_[w * k + c];
          }
        }
      }
#pragma omp critical(flashkm_bound_counts)
      {
        counts_.distances += bc.distances;
        counts_.pruned += bc.pruned;
        counts_.approx += bc.approx;
      }
    }
    for (std::size_t w = 0; w < nw; ++w) {
      if (accumulate) *inertia += tile_inertia[w];
      *changed += tile_changed[w];
    }
  }
}

template bool CpuEngine<float>::fused_fits(std::size_t) const;
template std::size_t CpuEngine<float>::fused_tile(std::size_t) const;
template void CpuEngine<float>::assign_update_tiled(const Chunk<float>&, std::size_t, std::int32_t*, float*, double*,
                                                    double*, double*, double*, std::size_t*, bool);
template bool CpuEngine<double>::fused_fits(std::size_t) const;
template std::size_t CpuEngine<double>::fused_tile(std::size_t) const;
template void CpuEngine<double>::assign_update_tiled(const Chunk<double>&, std::size_t, std::int32_t*, double*,
                                                     double*, double*, double*, double*, std::size_t*, bool);

}  // namespace flashkm::detail
