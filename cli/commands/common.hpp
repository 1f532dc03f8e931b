// Small helpers the subcommands share.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "flashkm/errors.hpp"
#include "io/dataset.hpp"

namespace flashkm::cli {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// "npy float32 big-endian Fortran-order".
std::string describe(const io::DatasetInfo& info);

/// Every row of `data` as T.
template <class T>
std::vector<T> read_all(const io::Dataset& data) {
  std::vector<T> X(data.rows() * data.cols());
  data.read_rows<T>(0, data.rows(), X.data());
  return X;
}

/// Centroids from a .npy/.fvecs/... file as a K x D matrix of T (K is set); InvalidData when the
/// file's rows are not `dim` long.
template <class T>
std::vector<T> read_centroids(const std::string& path, std::size_t dim, std::size_t* k) {
  io::Dataset c(path);
  if (c.cols() != dim) {
    throw InvalidData(path + ": centroids have " + std::to_string(c.cols()) + " columns but the data has " +
                      std::to_string(dim));
  }
  *k = c.rows();
  return read_all<T>(c);
}

/// Points per cluster.
std::vector<std::uint64_t> cluster_sizes(const std::vector<std::int32_t>& labels, std::size_t k);

}  // namespace flashkm::cli
