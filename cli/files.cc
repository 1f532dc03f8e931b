#include "files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"
#include "io/dataset.hpp"

namespace flashkm::cli {

void check_output(const std::string& out, const std::vector<std::string>& inputs, const char* what) {
  if (out.empty()) return;
  const std::size_t slash = out.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw io::FileError(std::string(what) + " '" + out + "': directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw io::FileError(std::string(what) + " '" + out + "': directory '" + dir + "' is not writable");
  }
  if (stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw io::FileError(std::string(what) + " '" + out + "' is a directory");
  }
  for (const std::string& in : inputs) {
    struct stat a, b;
    if (!in.empty() && stat(in.c_str(), &a) == 0 && stat(out.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
      throw UsageError(std::string(what) + " '" + out + "' is the input file '" + in + "'; refusing to overwrite it");
    }
  }
}

}  // namespace flashkm::cli
