// Which files a folder holds, in the order model_signing lists them, and the
// ignore rule it applies (a path ignores itself and everything under it).
#include <algorithm>
#include <filesystem>

#include "signing/signing_internal.h"

namespace ptb {

namespace fs = std::filesystem;

bool path_is_under(const std::string& relative, const std::string& ignored) {
  if (ignored.empty()) return false;
  if (relative.size() < ignored.size() || relative.compare(0, ignored.size(), ignored) != 0) return false;
  return relative.size() == ignored.size() || relative[ignored.size()] == '/' || ignored.back() == '/';
}

bool signing_order_less(const std::string& a, const std::string& b) {
  // Component by component; within one, bytes compare as unsigned, which for
  // UTF-8 is the code-point order Python compares strings in.
  size_t i = 0, j = 0;
  while (i <= a.size() && j <= b.size()) {
    const size_t ea = std::min(a.find('/', i), a.size());
    const size_t eb = std::min(b.find('/', j), b.size());
    const std::string_view ca = std::string_view(a).substr(i, ea - i);
    const std::string_view cb = std::string_view(b).substr(j, eb - j);
    if (ca != cb) return ca < cb;  // string_view compares as unsigned char
    const bool a_done = ea == a.size(), b_done = eb == b.size();
    if (a_done || b_done) return a_done && !b_done;
    i = ea + 1;
    j = eb + 1;
  }
  return false;
}

const FileDigest* FolderDigests::find(const std::string& path) const {
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const FileDigest& file, const std::string& p) { return signing_order_less(file.path, p); });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

namespace detail {

Result<std::vector<FileDigest>> list_folder(const std::string& dir, const std::vector<std::string>& ignore) {
  std::vector<FileDigest> out;
  auto ignored = [&](const std::string& relative) {
    return std::any_of(ignore.begin(), ignore.end(), [&](const std::string& path) { return path_is_under(relative, path); });
  };
  // An explicit stack: a hostile folder nested thousands deep must not
  // exhaust the call stack.
  std::vector<std::pair<fs::path, std::string>> pending{{fs::path(dir), ""}};
  bool root = true;
  while (!pending.empty()) {
    auto [folder, prefix] = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    fs::directory_iterator it(folder, ec);
    if (ec) {
      if (root) return io_error(dir + ": cannot list the folder: " + ec.message());
      FileDigest entry;
      entry.path = prefix.substr(0, prefix.size() - 1);
      entry.kind = FolderEntryKind::Other;
      entry.error = "cannot list the folder: " + ec.message();
      out.push_back(std::move(entry));
      continue;
    }
    root = false;
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      if (ec) break;
      const std::string relative = prefix + it->path().filename().string();
      if (ignored(relative)) continue;
      std::error_code status_ec;
      const fs::file_status status = it->symlink_status(status_ec);
      FileDigest entry;
      entry.path = relative;
      if (fs::is_symlink(status)) {
        entry.kind = FolderEntryKind::Symlink;
      } else if (fs::is_directory(status)) {
        pending.emplace_back(it->path(), relative + "/");
        continue;
      } else if (fs::is_regular_file(status)) {
        entry.kind = FolderEntryKind::File;
      } else {
        entry.kind = FolderEntryKind::Other;
        entry.error = status_ec ? status_ec.message() : "not a regular file";
      }
      out.push_back(std::move(entry));
    }
    if (ec) {
      FileDigest entry;
      entry.path = prefix.empty() ? "." : prefix.substr(0, prefix.size() - 1);
      entry.kind = FolderEntryKind::Other;
      entry.error = "cannot list the folder: " + ec.message();
      out.push_back(std::move(entry));
    }
  }
  std::sort(out.begin(), out.end(), [](const FileDigest& a, const FileDigest& b) { return signing_order_less(a.path, b.path); });
  return out;
}

}  // namespace detail
}  // namespace ptb
