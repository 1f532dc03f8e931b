// Private header: the CPU engine (FlashAssign + Sort-Inverse Update on OpenMP threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "flashkm/matrix_view.hpp"

namespace flashkm::detail {

/// Creates the CPU engine over X. `target` names the kernels to use ("" = best available or
/// FLASHKM_TARGET); throws InvalidArgument for an unknown or unsupported target and
/// InvalidData when X holds NaN or infinity (naming row and column).
template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(MatrixView<T> X, std::span<const double> weights,
                                           int n_threads, const std::string& target);

/// Names of the targets make_cpu_engine accepts on this CPU, best first.
std::vector<std::string> cpu_target_names();

/// The target an empty `target` resolves to.
std::string cpu_default_target();

}  // namespace flashkm::detail
