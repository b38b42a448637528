// Fuzz inputs as files: the readers open paths and map them, so each input is
// written to one memfd (no disk traffic) that is reopened through
// /proc/self/fd. The mapping holds exactly the input's bytes, as with a real
// file of that size.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ptb::test {

inline const std::string& input_path(const uint8_t* data, size_t size) {
  static int fd = [] {
    int created = ::memfd_create("ptbundle-fuzz", MFD_CLOEXEC);
    if (created < 0) std::abort();
    return created;
  }();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (::ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return path;
}

// For targets that need a folder (the journals): a scratch folder of this
// fuzzing process under the system temp folder, and a file written into it.
inline std::filesystem::path scratch_root(const std::string& tag) {
  return std::filesystem::temp_directory_path() / ("ptbundle-fuzz-" + tag + "-" + std::to_string(::getpid()));
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace ptb::test
