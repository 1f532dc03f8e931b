// Private header: k-means++'s 8-bit sketch of the rows (docs/KERNELS.md, "Bounded seeding").
//
// A row y (centred as the kernels centre it) is held as s q with q in [-127, 127]^D, with an
// upper bound delta on ||y - s q|| computed from the row itself; candidates are sketched the same
// way, coarser (q' in [-kCandLevels, kCandLevels], kernel_table.hpp). ||y - c|| >= ||s q - s' q'|| - delta - delta', and ||s q - s' q'||^2 comes from one exact
// integer dot product, so the sketch proves most pairs of a k-means++ step unable to lower the
// row's closest distance after reading a quarter of X's bytes (kernel_table.hpp, sketch_mask).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/kernel_table.hpp"

namespace flashkm::detail {

/// The sketch of every row of a data set, in blocks of kSketchRows rows (SketchArgs' layout).
struct RowSketch {
  std::size_t rows = 0;
  std::size_t quads = 0;
  std::vector<std::uint8_t> q;        // blocks x quads x kSketchRows x 4, biased by 128
  std::vector<float> a, s, delta;     // blocks x kSketchRows (zero past the last row)

  /// Sizes the sketch for n rows of dim features.
  void reset(std::size_t n, std::size_t dim);
  /// Bytes held.
  std::size_t bytes() const { return q.size() + 4 * (a.size() + s.size() + delta.size()); }
  /// Sketches rows [r0, r1) of pts, the whole data set (r0 a multiple of kSketchRows, r1 too
  /// unless it is the last row). A row whose largest |y_j| is outside [2^-50, 2^40] (where the
  /// filter's float arithmetic is not covered) keeps all its pairs. Returns false on a value
  /// that is not finite.
  template <class T>
  bool build(const PointsRef<T>& pts, std::size_t r0, std::size_t r1);
  /// Block b's q values.
  const std::uint8_t* block_q(std::size_t b) const { return q.data() + b * quads * kSketchRows * 4; }
  /// Points g's row fields (q, quads, a, s, delta) at block b.
  void point_at(SketchArgs& g, std::size_t b) const {
    g.q = block_q(b);
    g.quads = quads;
    g.a = a.data() + b * kSketchRows;
    g.s = s.data() + b * kSketchRows;
    g.delta = delta.data() + b * kSketchRows;
  }
};

/// One step's candidates sketched (m x dim, as the kernels subtract them; a candidate outside
/// the filter's range keeps all its pairs); false on a value that is not finite (the step then
/// runs without the sketch).
struct CandSketch {
  std::vector<std::int32_t> cq, cfix;
  std::vector<std::int64_t> cw;
  std::vector<float> cb, cs, cdelta;
  template <class T>
  bool build(const T* cands, std::size_t m, std::size_t dim);
  /// Points g's candidate fields at candidates [t0, t0 + mm) (quads per candidate as built).
  void point_at(SketchArgs& g, std::size_t quads, std::size_t t0, std::size_t mm) const {
    g.cq = cq.data() + t0 * quads;
    g.cw = cw.data() + t0 * quads;
    g.cfix = cfix.data() + t0;
    g.cb = cb.data() + t0;
    g.cs = cs.data() + t0;
    g.cdelta = cdelta.data() + t0;
    g.m = mm;
  }
};

/// Whether the sketch is used for rows of dim features: from 16 features on it is smaller than
/// the rows (a quarter of float32, an eighth of float64, plus 12 bytes a row); below, the
/// triangle-inequality thresholds already skip most pairs, and its 12 bytes a row would save
/// little.
/// Rows of more than 64 KiB are left out too: their statistics blocks (rows.hpp) hold fewer
/// rows than a sketch block, which the filter would then run over several times.
inline bool sketch_pays(std::size_t dim, std::size_t row_bytes) {
  return dim >= 16 && dim <= 65536 && row_bytes <= 65536;
}

}  // namespace flashkm::detail
