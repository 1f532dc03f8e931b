// Private header: the CPU engine over sparse CSR rows (sparse FlashAssign + Sort-Inverse Update).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/engine.hpp"
#include "flashkm/sparse.hpp"

namespace flashkm::detail {

/// Creates the sparse engine over X. Its shift() is zero (sparse rows are not centred: that
/// would densify them); with prune = on it prunes with Yinyang bounds (docs/KERNELS.md, "Sparse
/// rows"); auto leaves it unpruned. `target` names the kernels ("" = best available or
/// FLASHKM_TARGET), as for the dense engine. Throws InvalidArgument for a malformed view or an
/// unknown target and InvalidData for NaN or infinity (naming row and column).
template <class T>
std::unique_ptr<Engine<T>> make_sparse_engine(CsrView<T> X, std::span<const double> weights, int n_threads,
                                              const std::string& target, Metric metric = Metric::kEuclidean);

}  // namespace flashkm::detail
