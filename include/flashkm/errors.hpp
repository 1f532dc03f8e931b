// The typed exceptions flashkm throws for user errors (internal invariants use asserts instead).
#pragma once

#include <stdexcept>
#include <string>

namespace flashkm {

/// Base of every exception flashkm throws on purpose. The message names the offending value and
/// where it was found (row, column, option name).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An option or a shape is invalid: n_clusters out of range, a row stride smaller than the row,
/// a null pointer, an init matrix of the wrong shape, an unknown or unsupported SIMD target.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// The values themselves are unusable: NaN or infinity in the data or the initial centroids,
/// negative or all-zero sample weights.
class InvalidData : public Error {
 public:
  using Error::Error;
};

}  // namespace flashkm
