// Private header: what the driver asks of a backend. One factory makes an engine over the data
// (dense rows, a RowSource, sparse CSR rows) with its weights and threads fixed; the rest are
// the backend's answers about targets and chunking, and the 16-bit rows adapter. Implemented by
// the CPU backend (src/cpu/backend.cc); src/core includes no header of a backend's own, and a
// CUDA backend would implement this file's functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "flashkm/half.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/source.hpp"
#include "flashkm/sparse.hpp"

namespace flashkm::detail {

/// An engine over X (rows row_offset.. of a larger data set when X is one shard of it: errors
/// name rows in the whole data set) for `metric` (engine.hpp: fixed for the engine's life). `target` names the kernels ("" = the best available, or
/// FLASHKM_TARGET). Throws InvalidArgument for an unknown or unsupported target and InvalidData
/// when X holds NaN or infinity (naming row and column).
template <class T>
std::unique_ptr<Engine<T>> make_engine(MatrixView<T> X, std::span<const double> weights, int n_threads,
                                       const std::string& target, std::size_t row_offset = 0,
                                       Metric metric = Metric::kEuclidean);

/// The same over a RowSource, whose chunks hold whole multiples of granule(cols, sizeof(T))
/// rows; bitwise the in-memory engine's results.
template <class T>
std::unique_ptr<Engine<T>> make_engine(RowSource<T>& source, std::span<const double> weights, int n_threads,
                                       const std::string& target, std::size_t row_offset = 0,
                                       Metric metric = Metric::kEuclidean);

/// The same over sparse CSR rows (not centred: shift() is zero).
template <class T>
std::unique_ptr<Engine<T>> make_engine(CsrView<T> X, std::span<const double> weights, int n_threads,
                                       const std::string& target, Metric metric = Metric::kEuclidean);

/// Rows per chunk granule of a RowSource (a power of two, about 16 MiB of rows).
std::size_t granule(std::size_t cols, std::size_t elem_size);

/// Targets make_engine accepts on this machine, best first; the one "" resolves to.
std::vector<std::string> target_names();
std::string default_target_name();

/// Targets for 16-bit input, the default first (see flashkm::available_half_targets).
std::vector<std::string> half_target_names();

/// 16-bit rows as float32 rows, widened a chunk at a time on n_threads threads as each pass
/// reads them (the source also tells the engine the rows' 16-bit type, for AMX tiles).
std::unique_ptr<RowSource<float>> make_half_source(HalfView X, int n_threads);

}  // namespace flashkm::detail
