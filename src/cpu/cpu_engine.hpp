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
#include "flashkm/source.hpp"

namespace flashkm::detail {

/// Creates the CPU engine over X (rows row_offset.. of a larger data set when X is one shard
/// of it: errors name rows in the whole data set). `target` names the kernels to use ("" = best available or
/// FLASHKM_TARGET); throws InvalidArgument for an unknown or unsupported target and
/// InvalidData when X holds NaN or infinity (naming row and column). `metric` is fixed for the
/// engine's life (core/engine.hpp).
template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(MatrixView<T> X, std::span<const double> weights,
                                           int n_threads, const std::string& target,
                                           std::size_t row_offset = 0, Metric metric = Metric::kEuclidean);

/// The same over a RowSource: every pass over X reads the source's chunks, which must hold
/// whole multiples of cpu_granule(cols, sizeof(T)) rows; results are bitwise those of the
/// in-memory engine over the same rows.
template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(RowSource<T>& source, std::span<const double> weights,
                                           int n_threads, const std::string& target,
                                           std::size_t row_offset = 0, Metric metric = Metric::kEuclidean);

/// Rows per chunk granule of a RowSource (a power of two, about 16 MiB of rows).
std::size_t cpu_granule(std::size_t cols, std::size_t elem_size);

/// Names of the targets make_cpu_engine accepts on this CPU, best first.
std::vector<std::string> cpu_target_names();

/// The target an empty `target` resolves to.
std::string cpu_default_target();

}  // namespace flashkm::detail
