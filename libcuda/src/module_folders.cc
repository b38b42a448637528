// runtime_module_folders and module_refusal (module_folders.h).
#include "module_folders.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ptbundle/cuda/runner_config.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

// The file holding this code: the executable (whose name dladdr would give
// as argv[0], possibly a bare name found on PATH) through /proc/self/exe, or
// the shared library it was linked into.
fs::path program_file() {
  Dl_info info{};
  link_map* map = nullptr;
  const bool found = ::dladdr1(reinterpret_cast<void*>(&program_file), &info, reinterpret_cast<void**>(&map),
                               RTLD_DL_LINKMAP) != 0;
  std::error_code ec;
  if (found && map && map->l_name && map->l_name[0] != '\0') {
    fs::path library = fs::canonical(map->l_name, ec);
    if (!ec) return library;
  }
  fs::path executable = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : executable;
}

// Why `info` (of `path`, a `what`) may not be trusted; empty when it may.
std::string refusal(const std::string& path, const char* what, const struct stat& info) {
  const uid_t user = ::geteuid();
  if (info.st_uid != 0 && info.st_uid != user) {
    return path + ": the " + what + " is owned by user " + std::to_string(info.st_uid) + ", not by root or by you (user " +
           std::to_string(user) + ")";
  }
  if (info.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return path + ": the " + what + " is writable by " + ((info.st_mode & S_IWOTH) ? "every user" : "its group") +
           " (mode " + mode + ")";
  }
  return {};
}

}  // namespace

std::vector<std::string> runtime_module_folders() {
  if (const char* dir = std::getenv("PTBUNDLE_RUNTIME_DIR"); dir && *dir) return {dir};
  std::vector<std::string> folders;
  const fs::path self = program_file();
  if (self.empty()) return folders;
  const fs::path folder = self.parent_path();
  folders.push_back(folder.string());
  for (const fs::path& libdir : {fs::path(PTB_INSTALL_LIBDIR), fs::path("lib")}) {
    if (libdir.is_absolute()) continue;  // a folder compiled in, not one relative to the program
    const std::string candidate = (folder.parent_path() / libdir / "ptbundle").string();
    if (std::find(folders.begin(), folders.end(), candidate) == folders.end()) folders.push_back(candidate);
  }
  return folders;
}

std::string module_refusal(const std::string& path) {
  std::error_code ec;
  const fs::path file = fs::canonical(path, ec);
  if (ec) return path + ": cannot resolve: " + ec.message();
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return file.string() + ": not a regular file";
  const std::string shown = file.string() == path ? path : path + " (" + file.string() + ")";
  if (std::string why = refusal(shown, "module", info); !why.empty()) return why;
  const fs::path folder = file.parent_path();
  if (::stat(folder.c_str(), &info) != 0) return folder.string() + ": cannot read the folder";
  return refusal(folder.string(), "folder holding the module", info);
}

}  // namespace ptb::detail
