// Private header: a 64-byte aligned buffer that only grows (packed centroids, kernel scratch).
#pragma once

#include <cstddef>

#include <hwy/aligned_allocator.h>

namespace flashkm::detail {

template <class T>
class AlignedBuffer {
 public:
  /// At least n elements (contents unspecified after growing); reallocates only to grow.
  T* reserve(std::size_t n) {
    if (n > cap_) {
      buf_ = hwy::AllocateAligned<T>(n);
      cap_ = n;
    }
    return buf_.get();
  }
  T* data() { return buf_.get(); }
  const T* data() const { return buf_.get(); }

 private:
  hwy::AlignedFreeUniquePtr<T[]> buf_;
  std::size_t cap_ = 0;
};

}  // namespace flashkm::detail
