// Private header: FlashAssign's kernel providers behind one interface (docs/KERNELS.md). The
// CPU engine packs the SIMD target's panels once per set of centroids, then hands rows to its
// provider: the target's panel kernels, or for 16-bit rows the AMX tiles / AVX-512-BF16 filter
// that re-scores with those same panels (bitwise the same labels and distances either way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/amx.hpp"
#include "cpu/kernel_table.hpp"

namespace flashkm::detail {

template <class T>
class AssignProvider {
 public:
  virtual ~AssignProvider() = default;
  /// The target name reported for this provider.
  virtual const char* name() const = 0;
  /// k centred centroids (float64, k x dim), after the engine packed them with `panel` into
  /// `packed` (norms zeroed for the inner-product metrics); `packed` stays valid until the
  /// next prepare.
  virtual void prepare(const double* centroids, std::size_t k, std::size_t dim, const PanelKernels<T>* panel,
                       const T* packed, const T* packed_norms) = 0;
  /// FlashAssign over rows [a, b) on one thread: the contract of PanelKernels::assign_rows.
  virtual std::size_t assign_rows(const PointsRef<T>& pts, std::size_t a, std::size_t b, std::int32_t* labels,
                                  T* dist) = 0;
};

/// The SIMD target's panel kernels.
template <class T>
class PanelProvider final : public AssignProvider<T> {
 public:
  explicit PanelProvider(const KernelTable<T>* table) : table_(table) {}
  const char* name() const override { return table_->name; }
  void prepare(const double*, std::size_t k, std::size_t, const PanelKernels<T>* panel, const T* packed,
               const T*) override {
    k_ = k;
    panel_ = panel;
    packed_ = packed;
  }
  std::size_t assign_rows(const PointsRef<T>& pts, std::size_t a, std::size_t b, std::int32_t* labels,
                          T* dist) override {
    return panel_->assign_rows(pts, packed_, k_, a, b, labels, dist);
  }

 private:
  const KernelTable<T>* table_;
  const PanelKernels<T>* panel_ = nullptr;
  const T* packed_ = nullptr;
  std::size_t k_ = 0;
};

/// 16-bit rows (held as float32): AMX tiles or AVX-512-BF16 filter, the target's float32 panel
/// kernels re-score (amx.hpp).
class HalfProvider final : public AssignProvider<float> {
 public:
  HalfProvider(const KernelTable<float>* table, const std::vector<float>& shift, bool fp16, HalfKernel kernel)
      : table_(table), shift_(shift), fp16_(fp16), kernel_(kernel) {}
  const char* name() const override { return kernel_ == HalfKernel::kTiles ? kAmxTargetName : kDpbf16TargetName; }
  void prepare(const double* centroids, std::size_t k, std::size_t dim, const PanelKernels<float>* panel,
               const float* packed, const float* packed_norms) override {
    amx_pack(centroids, k, dim, packed_norms, shift_.data(), fp16_, kAmxPieces, &amx_);
    rescore_ = AmxRescore{table_->center_rows, table_->center_pad, panel->assign_rows, packed};
  }
  std::size_t assign_rows(const PointsRef<float>& pts, std::size_t a, std::size_t b, std::int32_t* labels,
                          float* dist) override {
    return amx_assign_rows(amx_, pts, rescore_, a, b, labels, dist, kernel_);
  }

 private:
  const KernelTable<float>* table_;
  const std::vector<float>& shift_;  // the engine's float32 centring vector (set_mean may change it)
  bool fp16_;
  HalfKernel kernel_;
  AmxCentroids amx_;
  AmxRescore rescore_{};
};

}  // namespace flashkm::detail
