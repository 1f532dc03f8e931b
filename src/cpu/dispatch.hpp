// Private header: every SIMD target's kernels through Highway's own dispatch tables.
//
// Each kernel file exports one function per element type that returns its target's table
// (HWY_EXPORT). The engine wants them all, best first: the best to run, the others to force by
// name (KMeansOptions::target, FLASHKM_TARGET) and for the tests, which compare every target
// with the reference. Highway chooses among the targets it compiled and the CPU supports;
// pointing its choice at one target at a time (SetSupportedTargetsForTest, Highway's own way to
// run every target) and calling through HWY_DYNAMIC_DISPATCH lists them without a hand-written
// list of targets.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include <hwy/targets.h>

namespace flashkm::detail {

/// Serialises the listings: the target Highway dispatches to is process-wide state.
inline std::mutex& dispatch_mutex() {
  static std::mutex m;
  return m;
}

/// Calls fn() once per target Highway compiled and this CPU supports, best first, with
/// Highway's dynamic dispatch choosing that target; then restores its normal choice (Highway
/// chooses afresh after SetSupportedTargetsForTest(0)). Meanwhile another thread's dynamic
/// dispatch (half_convert.cc) may run on one of the listed targets: supported, so correct.
template <class Fn>
void for_each_target(Fn&& fn) {
  const std::lock_guard<std::mutex> lock(dispatch_mutex());
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();  // lowest bit (best) first
  for (const std::int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    fn();
  }
  hwy::SetSupportedTargetsForTest(0);
}

/// Every target's table, best first (get() calls one exported table function through
/// HWY_DYNAMIC_DISPATCH), then the scalar reference.
template <class Table, class Get>
std::vector<const Table*> target_tables(Get get, const Table* reference) {
  std::vector<const Table*> out;
  for_each_target([&] { out.push_back(get()); });
  out.push_back(reference);
  return out;
}

}  // namespace flashkm::detail
