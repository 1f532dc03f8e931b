// Private header: the fit driver over any engine (CPU in memory or streamed, MPI shards).
#pragma once

#include <memory>

#include "core/engine.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"

namespace flashkm::detail {

/// Initialisation runs (n_init), Lloyd, and the best run's result in X's coordinates. Options
/// must have been validated against the engine's data.
template <class T>
KMeansResult<T> fit_engine(std::unique_ptr<Engine<T>> engine, const KMeansOptions& options);

}  // namespace flashkm::detail
