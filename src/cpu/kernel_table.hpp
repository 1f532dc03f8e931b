// Private header: the per-target kernel table through which the CPU engine calls its kernels.
//
// Kernel contract (BLIS style; see docs/KERNELS.md):
// * Centroids are packed once per iteration by `pack_centroids` into panels of `nr` centroids:
//   panel p holds, for every feature j, the `nr` values c[p*nr + l][j] contiguously
//   ([p][j][l]), followed after the last panel by the squared norms of all padded centroids.
//   Padding centroids are zero with norm +inf, so they never win an argmin.
// * Points are read from the caller's rows and centred on `shift` while being packed into an
//   L1/L2-resident sliver; nothing N x K is ever written by `assign_rows`.
// * Every function works on a row range on one thread; the engine owns threads and blocking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashkm::detail {

/// The data side of an assignment: rows of X, centred on `shift` (in X's type).
template <class T>
struct PointsRef {
  const T* x = nullptr;
  std::size_t stride = 0;
  std::size_t dim = 0;
  const T* shift = nullptr;  // dim values subtracted from every row
};

/// Most centroids sqdist_few takes at once (k-means++ uses 2 + ln K of them).
inline constexpr std::size_t kMaxFew = 16;

/// The FlashAssign kernels for one panel width (see the contract above).
template <class T>
struct PanelKernels {
  std::size_t nr;  // centroids per packed panel

  /// T elements needed to pack k centroids of dimension dim (panels + norms).
  std::size_t (*packed_size)(std::size_t k, std::size_t dim);

  /// Packs k centred centroids (float64, row-major k x dim) into `packed`.
  void (*pack_centroids)(const double* centroids, std::size_t k, std::size_t dim, T* packed);

  /// FlashAssign over rows [r0, r1): labels[r] = argmin_c ||x_r - c||^2 (ties: lowest index),
  /// dist[r] = that squared distance (>= 0). Returns how many labels differ from the values
  /// labels[] held on entry.
  std::size_t (*assign_rows)(const PointsRef<T>& pts, const T* packed, std::size_t k,
                             std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist);

  /// Squared distances of rows [r0, r1) to all k packed centroids, out[(r - r0) * ldo + c].
  void (*sqdist_rows)(const PointsRef<T>& pts, const T* packed, std::size_t k, std::size_t r0,
                      std::size_t r1, T* out, std::size_t ldo);

  /// Bounded assignment's scoring of one centroid group: for m rows packed by
  /// KernelTable::pack_rows, held by pointer (xr[i]; xr holds m rounded up to center_pad
  /// pointers, the extra pointing at any packed row, their results unused), and the packed positions
  /// [c0, c1) (c0 a multiple of nr; c1 a multiple of nr or k), per row i: min1[i] = the smallest
  /// score ||c||^2 - 2 x.c over them, bitwise as assign_rows computes that pair's score;
  /// idx1[i] = the lowest centroid index holding it, where ids[p] is the index of the centroid
  /// packed at position p, as T (the panels may be in any order, but within a panel the ids
  /// ascend with the position; padding positions hold +inf; a NaN score is never the minimum,
  /// and where no score is below +inf, min1[i] = +inf and idx1[i] = ids[c0]); min2[i] = the
  /// smallest score of the others (+inf if none). Only the m rows and the group's panels are
  /// read, and only min1 / idx1 / min2 written: nothing rows x K. Where scores is not null,
  /// every score as well: scores[i * lds + (p - c0)] for the positions p of the group's whole
  /// panels (lds at least c1 - c0 rounded up to nr; past c1, padding positions' scores), the
  /// per-centroid bounds of the bounded assignment.
  void (*group_min)(const T* const* xr, std::size_t dim, const T* packed, const T* ids, std::size_t k,
                    std::size_t c0, std::size_t c1, std::size_t m, T* min1, std::int32_t* idx1, T* min2, T* scores,
                    std::size_t lds);
};

/// Rows per block of k-means++'s 8-bit row sketch (cpu/sketch.hpp).
inline constexpr std::size_t kSketchRows = 16;

/// A candidate's sketch values lie in [-kCandLevels, kCandLevels] (the rows' in [-127, 127]):
/// AVX2's unsigned-by-signed byte products (VPMADDUBSW) add a row's biased bytes (at most 255)
/// times two of them into an int16 lane (at most 2 * 255 * 31 = 15810), and two quads' such
/// sums still fit (31620 < 2^15), so they never saturate and are widened once per two quads.
/// The coarser candidates cost little: their error bound enters the test once, the row's
/// finer one once (distances computed at 100,000 x 128 x 1024: 0.25% of the plain seeding's
/// with 127 levels, 0.29% with 63, 0.41% with 31, 0.87% with 15).
inline constexpr int kCandLevels = 31;

/// One block of kSketchRows rows of the row sketch and one step's candidate sketches, for
/// sketch_mask. A row y (centred as the kernels centre it) is held as s * q, q in [-127, 127]^D,
/// with ||y - s q|| <= delta; a candidate likewise as (cs / 2) * cq. Features go in quads, each
/// row's four side by side and stored biased (q + 128, an unsigned byte, as AVX-512 VNNI's
/// unsigned-by-signed products take them): q[(p * kSketchRows + i) * 4 + h] is 128 + feature
/// 4p + h of row i (128, for zero, past D). The integer dot product q . cq is then
/// sum (q + 128) cq - cfix, exact in int32 for D <= 65536 (|sum| <= 255 * 31 * D < 2^31; a
/// candidate's values lie within +-kCandLevels).
struct SketchArgs {
  const std::uint8_t* q;     // the block's rows: quads x kSketchRows x 4, biased by 128
  std::size_t quads;         // ceil(D / 4)
  const float* a;            // per row: ||s q||^2 (rounded to nearest)
  const float* s;            // per row: the scale s
  const float* delta;        // per row: an upper bound on ||y - s q||
  const float* cl;           // per row: the closest squared distance so far
  const std::int32_t* cq;    // m x quads words: byte h is feature 4p + h of candidate t (int8)
  const std::int64_t* cw;    // m x quads words: the same four features as int16 (lane h)
  const std::int32_t* cfix;  // per candidate: 128 * (the sum of its features cq)
  const float* cb;           // per candidate: ||(cs / 2) cq||^2 (rounded to nearest)
  const float* cs;           // per candidate: twice its scale
  const float* cdelta;       // per candidate: an upper bound on ||c - (cs / 2) cq||
  std::size_t m;             // candidates, at most kMaxFew
  float tau;                 // the kernels' distance slack: a computed squared distance d^ to a
  float over;                //   candidate is >= cl when the exact one is >= (cl + tau) * over
  /// The separable test (k-means||'s rounds, thousands of candidates a row): with rr and cc,
  /// bit t of row i is cleared when fl(fl(s_i cs_t) p) <= fl(rr_i + cc_t), p the exact q . cq
  /// (cl, tau and over are not read). The caller sets, rounded down to float,
  ///   rr_i <= a_i (1 - 2^-18) - (1 + lambda) R_i^2 (1 + 2^-20),  R_i >= sqrt(X_i) + delta_i,
  ///   cc_t <= cb_t (1 - 2^-18) - (1 + 1 / lambda) cdelta_t^2 (1 + 2^-20),
  /// for any lambda > 0. As (R + cd)^2 <= (1 + lambda) R^2 + (1 + 1 / lambda) cd^2, and the
  /// three roundings of the product (<= 3.01 u (a + cb)) and the one of the sum are far inside
  /// the 2^-18 and 2^-20 margins, a cleared bit proves ||s q - s' q'|| >= sqrt(X_i) + delta_i +
  /// cdelta_t, so the exact distance is >= X_i. Five float operations a pair, where the test
  /// above takes eleven.
  const float* rr = nullptr;  // per row
  const float* cc = nullptr;  // per candidate
};

/// The sketch filter's float margins: 1 + 2^-18 on radii and thresholds, 2^-18 (a + b) on
/// ||s q - s' q'||^2, each several times the rounding of the float steps they cover.
inline constexpr float kSketchUp = 1.0f + 0x1p-18f;
inline constexpr float kSketchErr = 0x1p-18f;

/// The sketch filter in plain C++ (the reference table's, and the scalar targets').
void ref_sketch_mask(const SketchArgs& args, std::uint32_t* mask);

/// The sketch filter with AVX-512 VNNI's byte dot products (cpu/sketch_vnni.cc): four
/// products per lane and instruction, where the portable kernels widen to int16 and take two.
/// Callable only when sketch_vnni_usable(); the AVX3 target's table uses it then.
void sketch_mask_vnni(const SketchArgs& args, std::uint32_t* mask);
bool sketch_vnni_usable();

/// The sketch filter with AVX2's byte products (cpu/sketch_avx2.cc): two pair sums per int16
/// lane and instruction (candidates within +-kCandLevels, so they never saturate), where the
/// portable kernel widens the rows' bytes first. Callable only when sketch_avx2_usable(); the
/// AVX2 target's table uses it.
void sketch_mask_avx2(const SketchArgs& args, std::uint32_t* mask);
bool sketch_avx2_usable();

template <class T>
struct KernelTable {
  const char* name;  // the Highway target name of the code that runs, or "reference"

  /// The register panel as wide as the target allows, and a one-vector panel for K <= its nr
  /// (the engine picks by K; both follow the same contract).
  PanelKernels<T> wide;
  PanelKernels<T> narrow;

  /// Squared distances of rows [r0, r1) to one centred centroid (given in T, dim values),
  /// computed from the differences (no norm expansion): out[r - r0]. Bandwidth-bound; used to
  /// lower k-means++'s closest distances after each step.
  void (*sqdist_one)(const PointsRef<T>& pts, const T* centroid, std::size_t r0, std::size_t r1,
                     T* out);

  /// Squared distances of rows [r0, r1) to m <= kMaxFew centred centroids given in T (m x dim,
  /// row-major), from differences: out[(r - r0) * m + t]. One pass over the rows scores all of
  /// k-means++'s candidates. Each out value is bitwise sqdist_one's for that candidate, whatever
  /// m and the other candidates (the bounded seeding keeps the distances it scored).
  void (*sqdist_few)(const PointsRef<T>& pts, const T* centroids, std::size_t m, std::size_t r0,
                     std::size_t r1, T* out);

  /// sqdist_few over m <= kMaxFew centroids given by pointers (centroids[t] holds dim values):
  /// each value bitwise sqdist_one's for that centroid. Scores a subset of k-means++'s
  /// candidates without copying them.
  void (*sqdist_listed)(const PointsRef<T>& pts, const T* const* centroids, std::size_t m, std::size_t r0,
                        std::size_t r1, T* out);

  /// Rows [r, r + m) centred on the shift exactly as assign_rows centres them, row i at
  /// out + i * dim, with their float squared norms in xnorm[i]; out and xnorm must hold m
  /// rounded up to `center_pad` rows (the excess is zero). Lets another kernel (AMX) re-score
  /// pairs bitwise as assign_rows would.
  void (*center_rows)(const PointsRef<T>& pts, std::size_t r, std::size_t m, T* out, T* xnorm);
  std::size_t center_pad;

  /// The rows idx[0..m) (m <= center_pad, any order) packed as one sliver for group_min:
  /// centred and normed exactly as assign_rows packs them, rows m..center_pad zero.
  void (*pack_rows)(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t m, T* xp, T* xnorm);

  /// Sort-Inverse Update inner loop: for the n points idx[0..n) (one cluster's run, in order),
  /// sum[j] += w * x[j] and sq[j] += w * (x[j] - centroid[j])^2 in float64 (the centroid in
  /// X's own coordinates), wsum += w; without weights (null) the multiplications by w are
  /// skipped. The additions happen point by point in order and without fused multiply-adds,
  /// so every target gives bitwise the same sums. idx[n..idx_valid) may be read for prefetching.
  void (*accumulate_run)(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t n,
                         std::size_t idx_valid, const double* weights, const double* centroid, double* sum,
                         double* wsum, double* sq);

  /// k-means++'s sketch filter over one block of rows: bit t of mask[i] is clear only when the
  /// sketches prove that candidate t's computed distance to row i is >= cl[i] (so min(cl, d)
  /// keeps cl): the integer dot products q . cq are exact, and every float rounding of the test
  /// is covered, so a target may round its float steps its own way. A set bit proves nothing.
  void (*sketch_mask)(const SketchArgs& args, std::uint32_t* mask);
  /// The target's portable (Highway) sketch filter, which sketch_mask replaces by VNNI's where
  /// the CPU has it (and by AVX2's byte products on the AVX2 target): kept so that the tests
  /// run it on every machine.
  void (*sketch_mask_portable)(const SketchArgs& args, std::uint32_t* mask);

  /// The bounded assignment's per-centroid lower bounds after the centroids moved: each of
  /// lb[0, n) becomes bounds::lower_step's value for it (the float step towards zero from
  /// fl(lb[c] - cdf[c]), 0 where that is not positive, +inf kept), gmin[g] the smallest new
  /// bound of positions [g gs, min(n, (g + 1) gs)); returns the smallest of all. The same bits
  /// on every target.
  float (*lower_step_groups)(float* lb, const float* cdf, std::size_t n, std::size_t gs, float* gmin);

  /// Per-centroid lower bounds from one row's n scores: lb[c] <= sqrt(sc[c] + base), 0 where
  /// that is not positive, with every rounding of the target's arithmetic taken below (float
  /// scores: base rounded down to float, a float sum and square root, then three float steps
  /// towards zero, more than their 2.5 ulps; double scores: bounds::down of the double root).
  /// The same bits on every target.
  void (*bounds_from_scores)(const T* sc, std::size_t n, double base, float* lb);

  /// The bounded assignment's pair filter: one packed row x (dim values, as pack_rows packs it)
  /// against m listed centroids: out[q] = fl(||c||^2 - 2 x.c) for the centroid held in row
  /// pos[q] of crows (row-major, dim values each) with squared norm cnorms[pos[q]]. The dot
  /// product is summed in the target's own order (feature lanes, then a tree), so its bits are
  /// NOT group_min's and may differ between targets; its rounding error has group_min's bound
  /// (gamma_dim |x||c|), which is all the filter uses: a pair whose score provably exceeds the
  /// row's best is skipped, and its lower bound is taken from this score.
  void (*pair_scores)(const T* x, std::size_t dim, const T* crows, const T* cnorms, const std::uint32_t* pos,
                      std::size_t m, T* out);
};

/// Every compiled target's tables the running CPU supports, best first, then the reference.
template <class T>
std::vector<const KernelTable<T>*> kernel_tables();

/// The scalar reference kernels (always compiled, no SIMD).
template <class T>
const KernelTable<T>& reference_table();

}  // namespace flashkm::detail
