// The command's errors and exit codes: 0 success, 1 data or I/O errors, 2 usage errors,
// 130 interrupted.
#pragma once

#include <exception>
#include <string>

#include "flashkm/errors.hpp"

namespace flashkm::cli {

constexpr int kExitData = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

/// A command line that parses but makes no sense (exit code 2, as the library's
/// InvalidArgument; deriving from it keeps the code when MPI ranks agree on the error).
class UsageError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// An error of the engine about the data, re-thrown with the file it came from.
template <class E>
[[noreturn]] void rethrow_in(const std::string& file, const E& e) {
  throw E(file + ": " + e.what());
}

/// Prints the error (when `print`) as "flashkm: error: ..." on stderr and returns its exit code.
int report_error(std::exception_ptr error, bool print);

}  // namespace flashkm::cli
