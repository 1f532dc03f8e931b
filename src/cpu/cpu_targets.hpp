// Private header of the CPU room: which kernel table the CPU engine runs -- the target asked for
// (option or FLASHKM_TARGET) or else the best this CPU supports.
#pragma once

#include <string>

#include "cpu/kernel_table.hpp"

namespace flashkm::detail {

/// The kernel table named `wanted` ("" = the best available); throws InvalidArgument, naming
/// the available targets, for a name that is unknown or not supported by this CPU.
template <class T>
const KernelTable<T>* find_table(const std::string& wanted);

/// Whether the float32 kernel table `name` multiplies with fused multiply-adds, as the 16-bit
/// kernels' float32 re-scoring must.
bool fma_table(const char* name);

/// The target option, or FLASHKM_TARGET when the option is empty.
std::string requested_target(const std::string& option);

}  // namespace flashkm::detail
