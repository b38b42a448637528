// Shared by the kernel, compatibility and GPU tests: the images nvcc built
// for them (tests/kernels/kernels.cmake), and scanning files and .pt2 entries.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/kernels/kernel_images.h"
#include "support.h"

namespace ptb::test {

// <build>/tests/kernels, or "" when nvcc was missing (kernels_missing() says why).
inline fs::path kernels_dir() { return PTB_TEST_KERNELS_DIR; }
inline std::string kernels_missing() { return PTB_TEST_KERNELS_MISSING; }
inline fs::path kernel_image(const std::string& name) { return kernels_dir() / name; }

// The entry of `package` whose name ends with `suffix` (the only one).
std::vector<uint8_t> read_pt2_entry(const fs::path& package, const std::string& suffix);

// scan_kernels on the bytes; REQUIREs success.
std::vector<KernelImage> scan_ok(const std::vector<uint8_t>& bytes, const std::string& name);
std::vector<KernelImage> scan_file_ok(const fs::path& path);

// Sorted "sm_80 cubin", "compute_90 ptx" strings, for comparing target sets.
std::vector<std::string> target_list(const std::vector<KernelImage>& images);

}  // namespace ptb::test

#define PTB_REQUIRE_TEST_KERNELS()                                   \
  do {                                                               \
    if (::ptb::test::kernels_dir().empty()) {                        \
      ::ptb::test::skip(::ptb::test::kernels_missing());             \
      return;                                                        \
    }                                                                \
  } while (0)
