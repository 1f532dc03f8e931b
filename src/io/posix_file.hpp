// Private header: the POSIX file calls src/io is built on (open, positional reads, full writes,
// atomic replace), each turning an OS failure into a FileError that names the file, and the
// helpers that format every src/io error message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "io/dataset.hpp"

namespace flashkm::io::detail {

/// "<path>: <what>" as a FormatError; every reader reports problems this way so the message
/// always starts with the file it is about.
[[noreturn]] void throw_format(const std::string& path, const std::string& what);
/// File contents quoted in a message: at most `max` characters, anything unprintable as \xHH,
/// "..." if cut, so that hostile input cannot flood or garble a terminal.
std::string excerpt(std::string_view s, std::size_t max = 40);
/// "<path>: <what>: <OS error text>" as a FileError.
[[noreturn]] void throw_os(const std::string& path, const std::string& what, int err);

/// Owns one file descriptor; closes it on destruction (never throws).
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

/// Opens a regular file for reading and returns it with its size. FileError if it cannot be
/// opened or is a directory, a FIFO or a device; FormatError if it is empty.
UniqueFd open_data_file(const std::string& path, std::uint64_t* size);

/// Reads exactly n bytes at `offset` with pread, retrying short reads and EINTR. FileError if
/// the OS fails or the file ends first (it got shorter since it was probed).
void pread_exact(int fd, const std::string& path, void* buf, std::size_t n, std::uint64_t offset);

/// Writes `path` atomically: `fill` writes the contents to the descriptor it is given (use
/// write_all), then the file is flushed to disk, given mode 0644 less the umask and renamed over
/// `path`. On any failure the temporary file is removed and FileError names `path`.
void atomic_write(const std::string& path, const std::function<void(int fd)>& fill);
/// The two halves of atomic_write: the complete, flushed temporary file next to `path` (its
/// name returned; removed on failure), and its rename over `path` (removed on failure).
std::string write_temporary(const std::string& path, const std::function<void(int fd)>& fill);
void publish(const std::string& temporary, const std::string& path);

/// Writes n bytes to fd, retrying short writes and EINTR; FileError naming `path` on failure.
void write_all(int fd, const std::string& path, const void* buf, std::size_t n);

}  // namespace flashkm::io::detail
