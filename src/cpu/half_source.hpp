// Private header (cpu): how the CPU engine recognises rows that arrive as 16-bit floats (widened to
// float32 by the RowSource), so that it can run FlashAssign on AMX tiles over them.
#pragma once

#include "flashkm/half.hpp"

namespace flashkm::detail {

/// Implemented by a RowSource<float> whose values are all exactly 16-bit floats of this type.
class HalfBacked {
 public:
  virtual HalfType half_type() const = 0;

 protected:
  ~HalfBacked() = default;
};

}  // namespace flashkm::detail
