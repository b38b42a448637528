// The kernel files a library loads by name (LoadRequest::kernel_files),
// written into a private folder whose path the model container is created
// with (AOTInductorModelContainerCreateWithDevice's cubin_dir): the library
// loads each kernel at its first launch, which may come at any call, so the
// folder lives as long as the model and is removed with it. The folder is
// made by mkdtemp (mode 0700, in $TMPDIR or /tmp), each name is checked
// (check_kernel_file_name) before a file is created in it, and files are
// created with O_EXCL | O_NOFOLLOW, mode 0600: nothing outside the folder
// is ever written.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"

namespace ptb::detail {

class KernelFolder {
 public:
  // No folder at all for a library without kernel files (path() is "").
  static Result<KernelFolder> create(const std::vector<KernelFileBytes>& files, const std::string& label);

  KernelFolder() = default;
  KernelFolder(KernelFolder&& other) noexcept;
  KernelFolder& operator=(KernelFolder&& other) noexcept;
  KernelFolder(const KernelFolder&) = delete;
  KernelFolder& operator=(const KernelFolder&) = delete;
  ~KernelFolder();

  const std::string& path() const { return path_; }

 private:
  void remove();

  std::string path_;
  std::vector<std::string> names_;
};

}  // namespace ptb::detail
