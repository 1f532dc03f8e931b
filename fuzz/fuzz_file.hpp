// Private header for the file-level fuzz targets: a scratch directory, writing one input as a
// file, and reading every row of a Dataset back in uneven chunks.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.hpp"

namespace flashkm::fuzz {

/// A directory under /tmp for this process, removed with the files in it at exit.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/flashkm_fuzz_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) __builtin_trap();
    dir_ = tmpl;
  }
  ~ScratchDir() {
    for (const auto& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  /// Writes the bytes to dir/name (replacing it) and returns the path.
  std::string write(const std::string& name, const std::uint8_t* data, std::size_t size) {
    std::string path = dir_ + "/" + name;
    if (std::find(files_.begin(), files_.end(), path) == files_.end()) files_.push_back(path);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) __builtin_trap();
    for (std::size_t done = 0; done < size;) {
      ssize_t put = ::write(fd, data + done, size - done);
      if (put <= 0) __builtin_trap();
      done += static_cast<std::size_t>(put);
    }
    ::close(fd);
    return path;
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

inline ScratchDir& scratch() {
  static ScratchDir dir;
  return dir;
}

/// Reads all rows as T in chunks of `chunk` rows (the last one shorter).
template <class T>
void read_all(const io::Dataset& ds, std::size_t chunk) {
  std::vector<T> out(chunk * ds.cols());
  for (std::size_t r = 0; r < ds.rows(); r += chunk) {
    ds.read_rows(r, std::min(ds.rows(), r + chunk), out.data());
  }
}

}  // namespace flashkm::fuzz
