// The built-in data sets of `flashkm demo`: generated blobs, Fashion-MNIST if installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace flashkm::cli {

/// n x d Gaussian blobs: k centres ~ N(0, 4^2 I), unit noise.
std::vector<float> make_blobs(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed);

/// Fashion-MNIST's 70,000 images (Debian's dataset-fashion-mnist, train then t10k) scaled to
/// [0, 1]; false when the package is not installed.
bool load_fashion_mnist(std::vector<float>& X, std::size_t& n, std::size_t& d);

}  // namespace flashkm::cli
