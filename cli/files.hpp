// Checks on the files a command will write, made before a long run rather than after it.
#pragma once

#include <string>
#include <vector>

namespace flashkm::cli {

/// Throws unless `out` (when not empty) could be written: its directory exists and is writable,
/// it is not a directory, and it is none of `inputs` (FileError, or UsageError for an input).
/// `what` names the option in the message ("output", "--labels").
void check_output(const std::string& out, const std::vector<std::string>& inputs, const char* what);

}  // namespace flashkm::cli
