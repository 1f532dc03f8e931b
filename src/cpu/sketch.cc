// k-means++'s 8-bit row sketch (see sketch.hpp).
#include "cpu/sketch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/bounds.hpp"

namespace flashkm::detail {
namespace {

// Sketches dim values y(j) into put(j, q_j); returns false for a value that is not finite. A
// zero row is held exactly (s = 0, q = 0, delta = 0); one whose largest |y_j| is outside
// [2^-50, 2^40], where the filter's float arithmetic is not covered, gets delta = +inf: every
// pair with it is kept (its bound proves nothing), the rest of the sketch still filters.
template <class Y, class Put>
bool quantize(std::size_t dim, Y y, Put put, float& a, float& s, float& delta, int levels) {
  double mx = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    const double v = y(j);
    if (!std::isfinite(v)) return false;
    mx = std::max(mx, std::fabs(v));
  }
  if (mx == 0 || mx < 0x1p-50 || mx > 0x1p40) {
    for (std::size_t j = 0; j < dim; ++j) put(j, 0);
    a = s = 0;
    delta = mx == 0 ? 0.0f : std::numeric_limits<float>::infinity();
    return true;
  }
  const float sf = static_cast<float>(mx / levels);
  const double sd = sf;
  std::int64_t qq = 0;
  double err = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    const double v = y(j);
    const int q = static_cast<int>(std::clamp(std::nearbyint(v / sd), -double(levels), double(levels)));
    put(j, q);
    qq += static_cast<std::int64_t>(q) * q;
    const double e = v - sd * q;  // sd * q is exact (24 + 7 bits); the difference rounds once
    err += e * e;
  }
  // The sum of D rounded squares (each term within 2^-52 relative of its exact value) and the
  // square root, widened well beyond their rounding; stored rounded up.
  const double grow = 1 + static_cast<double>(dim + 4) * 0x1p-51;
  delta = bounds::up(std::sqrt(err * grow) * (1 + 0x1p-50));
  a = static_cast<float>(sd * sd * static_cast<double>(qq));
  s = sf;
  return true;
}

}  // namespace

void RowSketch::reset(std::size_t n, std::size_t dim) {
  rows = n;
  quads = (dim + 3) / 4;
  const std::size_t blocks = (n + kSketchRows - 1) / kSketchRows;
  q.assign(blocks * quads * kSketchRows * 4, 128);  // zero, biased
  a.assign(blocks * kSketchRows, 0.0f);
  s.assign(blocks * kSketchRows, 0.0f);
  delta.assign(blocks * kSketchRows, 0.0f);
}

template <class T>
bool RowSketch::build(const PointsRef<T>& pts, std::size_t r0, std::size_t r1) {
  bool ok = true;
  for (std::size_t r = r0; r < r1 && ok; ++r) {
    const T* row = pts.x + r * pts.stride;
    std::uint8_t* blk = q.data() + (r / kSketchRows) * quads * kSketchRows * 4;
    const std::size_t i = r % kSketchRows;
    // As the kernels centre: the subtraction in T.
    auto y = [&](std::size_t j) { return static_cast<double>(static_cast<T>(row[j] - pts.shift[j])); };
    auto put = [&](std::size_t j, int v) {
      blk[((j / 4) * kSketchRows + i) * 4 + j % 4] = static_cast<std::uint8_t>(v + 128);
    };
    ok = quantize(pts.dim, y, put, a[r], s[r], delta[r], 127);
  }
  return ok;
}

template <class T>
bool CandSketch::build(const T* cands, std::size_t m, std::size_t dim) {
  const std::size_t quads = (dim + 3) / 4;
  cq.assign(m * quads, 0);
  cw.assign(m * quads, 0);
  cfix.assign(m, 0);
  cb.resize(m);
  cs.resize(m);
  cdelta.resize(m);
  for (std::size_t t = 0; t < m; ++t) {
    const T* c = cands + t * dim;
    std::int32_t* w = cq.data() + t * quads;
    std::int64_t* w16 = cw.data() + t * quads;
    std::int32_t fix = 0;
    auto y = [&](std::size_t j) { return static_cast<double>(c[j]); };
    // Feature 4p + h in byte h of word p, and in 16-bit lane h of the wide word p.
    auto put = [&](std::size_t j, int v) {
      const std::size_t h = j % 4;
      auto u = static_cast<std::uint32_t>(w[j / 4]);
      u |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(static_cast<std::int8_t>(v))) << (8 * h);
      w[j / 4] = static_cast<std::int32_t>(u);
      auto u16 = static_cast<std::uint64_t>(w16[j / 4]);
      u16 |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(static_cast<std::int16_t>(v))) << (16 * h);
      w16[j / 4] = static_cast<std::int64_t>(u16);
      fix += 128 * v;  // |fix| <= 128 * kCandLevels * 65536 < 2^31
    };
    float s = 0;
    if (!quantize(dim, y, put, cb[t], s, cdelta[t], kCandLevels)) return false;
    cs[t] = 2 * s;
    cfix[t] = fix;
  }
  return true;
}

template bool RowSketch::build<float>(const PointsRef<float>&, std::size_t, std::size_t);
template bool RowSketch::build<double>(const PointsRef<double>&, std::size_t, std::size_t);
template bool CandSketch::build<float>(const float*, std::size_t, std::size_t);
template bool CandSketch::build<double>(const double*, std::size_t, std::size_t);

}  // namespace flashkm::detail
