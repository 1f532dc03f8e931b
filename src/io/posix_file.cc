// POSIX file access for src/io: opening data files, positional reads, atomic replacement.
#include "io/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <vector>

namespace flashkm::io::detail {
namespace {

// Linux transfers at most 0x7ffff000 bytes per read/write call; asking for less than that keeps
// every call complete in the common case without relying on the kernel's clamping.
constexpr std::size_t kMaxIoBytes = std::size_t{1} << 30;

std::string os_message(int err) { return std::system_category().message(err); }

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The process umask, read from /proc rather than with umask(), which would have to set it to
// read it and so briefly change file creation for every other thread. 022 if /proc is absent.
mode_t current_umask() {
  mode_t mask = 022;
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return mask;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned value = 0;
    if (std::sscanf(line, "Umask: %o", &value) == 1) {
      mask = static_cast<mode_t>(value & 0777);
      break;
    }
  }
  std::fclose(f);
  return mask;
}

}  // namespace

std::string excerpt(std::string_view s, std::size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

void throw_format(const std::string& path, const std::string& what) {
  throw FormatError(path + ": " + what);
}

void throw_os(const std::string& path, const std::string& what, int err) {
  throw FileError(path + ": " + what + ": " + os_message(err));
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd open_data_file(const std::string& path, std::uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; it has no
  // effect on regular files, and anything else is refused just below.
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) throw_os(path, "cannot open", errno);
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_os(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) throw FileError(path + ": is a directory, not a data file");
  if (!S_ISREG(st.st_mode)) {
    throw FileError(path + ": not a regular file (positional reads need a file on disk)");
  }
  if (st.st_size == 0) throw_format(path, "the file is empty");
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

void pread_exact(int fd, const std::string& path, void* buf, std::size_t n,
                 std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    std::size_t want = std::min(n - done, kMaxIoBytes);
    ssize_t got = ::pread(fd, p + done, want, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_os(path, "read of " + std::to_string(n) + " bytes at byte offset " +
                         std::to_string(offset) + " failed",
               errno);
    }
    if (got == 0) {
      throw FileError(path + ": the file ends at byte offset " + std::to_string(offset + done) +
                      " but " + std::to_string(n) + " bytes were expected from byte offset " +
                      std::to_string(offset) + "; it got shorter since it was opened");
    }
    done += static_cast<std::size_t>(got);
  }
}

void write_all(int fd, const std::string& path, const void* buf, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    ssize_t put = ::write(fd, p + done, std::min(n - done, kMaxIoBytes));
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_os(path, "cannot write", errno);
    }
    done += static_cast<std::size_t>(put);
  }
}

std::string write_temporary(const std::string& path, const std::function<void(int fd)>& fill) {
  // The temporary file lives in the target's directory so that rename() stays on one file
  // system and is atomic: readers see the old file or the complete new one, never a torn one.
  // Its name is capped so that a long target name does not push it past NAME_MAX.
  std::string dir = dir_of(path);
  std::string tmpl = dir + "/." + base_of(path).substr(0, 200) + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int raw = ::mkstemp(name.data());
  if (raw < 0) throw_os(path, "cannot create a temporary file in " + dir, errno);
  UniqueFd fd(raw);
  try {
    fill(fd.get());
    if (::fsync(fd.get()) != 0) throw_os(path, "cannot flush to disk", errno);
    // mkstemp creates the file 0600; give it the mode open(..., 0644) would have.
    if (::fchmod(fd.get(), 0644 & ~current_umask()) != 0) {
      throw_os(path, "cannot set permissions", errno);
    }
    if (::close(fd.release()) != 0) throw_os(path, "cannot close", errno);
  } catch (...) {
    ::unlink(name.data());
    throw;
  }
  return std::string(name.data());
}

void publish(const std::string& temporary, const std::string& path) {
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    throw_os(path, "cannot rename the temporary file over it", err);
  }
  // Flush the directory entry too so the rename survives a crash. Some file systems refuse
  // fsync on a directory; the file itself is complete and in place, so that is not an error.
  int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void atomic_write(const std::string& path, const std::function<void(int fd)>& fill) {
  publish(write_temporary(path, fill), path);
}

}  // namespace flashkm::io::detail

namespace flashkm::io {

void write_text_atomic(const std::string& path, const std::string& text) {
  detail::atomic_write(path,
                       [&](int fd) { detail::write_all(fd, path, text.data(), text.size()); });
}

}  // namespace flashkm::io
