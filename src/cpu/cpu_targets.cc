// Target selection for the CPU engine: the kernel table forced by name (option or
// FLASHKM_TARGET) or else the best this CPU supports, and the names make_cpu_engine accepts.
#include "cpu/cpu_targets.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "cpu/cpu_engine.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {

template <class T>
const KernelTable<T>* find_table(const std::string& wanted) {
  const auto tables = kernel_tables<T>();
  if (wanted.empty()) return tables.front();
  for (const auto* t : tables) {
    if (wanted == t->name) return t;
  }
  std::string names;
  for (const auto* t : tables) names += std::string(names.empty() ? "" : ", ") + t->name;
  throw InvalidArgument("SIMD target '" + wanted +
                        "' is unknown or not supported by this CPU; available: " + names);
}

// The 16-bit kernels re-score with fused multiply-adds, which these targets' MulAdd is (the
// re-scoring must be the float32 kernels' arithmetic bit for bit).
bool fma_table(const char* name) { return std::string(name).rfind("AVX", 0) == 0; }

std::string requested_target(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("FLASHKM_TARGET");
  return env ? std::string(env) : std::string();
}

template const KernelTable<float>* find_table<float>(const std::string&);
template const KernelTable<double>* find_table<double>(const std::string&);

std::vector<std::string> cpu_target_names() {
  std::vector<std::string> names;
  for (const auto* t : kernel_tables<float>()) names.emplace_back(t->name);
  return names;
}

std::string cpu_default_target() { return find_table<float>(requested_target(""))->name; }

}  // namespace flashkm::detail
