// hash_folder: the folder's files hashed in parallel, largest first.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <filesystem>
#include <thread>

#include "signing/signing_internal.h"

namespace ptb {

namespace fs = std::filesystem;

Result<FolderDigests> hash_folder(const std::string& dir, const FolderHashOptions& options) {
  std::vector<std::string> ignore;
  for (std::string path : options.ignore) {
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (!path.empty()) ignore.push_back(std::move(path));
  }
  PTB_TRY(std::vector<FileDigest> entries, detail::list_folder(dir, ignore));

  // Sizes first: the schedule starts with the largest files, so that the last
  // file to finish is a small one and every core stays busy to the end.
  std::vector<size_t> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].kind != FolderEntryKind::File) continue;
    std::error_code ec;
    uint64_t size = 0;
    if (auto open = options.open_files.find(entries[i].path); open != options.open_files.end()) {
      struct stat info {};
      if (::fstat(open->second.fd, &info) == 0) size = static_cast<uint64_t>(info.st_size);
      else ec = std::error_code(errno, std::generic_category());
    } else {
      size = fs::file_size(fs::path(dir) / entries[i].path, ec);
    }
    entries[i].size = ec ? 0 : size;
    if (auto expected = options.expected_sizes.find(entries[i].path);
        !ec && expected != options.expected_sizes.end() && expected->second != size) {
      entries[i].error = "not hashed: " + std::to_string(size) + " bytes where " + std::to_string(expected->second) +
                         " were expected";
      continue;
    }
    if (options.hash_only && !options.hash_only->count(entries[i].path)) {
      entries[i].error = "not hashed: listed neither in bundle.json nor in the signature";
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return entries[a].size > entries[b].size; });

  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t at = next.fetch_add(1); at < order.size(); at = next.fetch_add(1)) {
      FileDigest& entry = entries[order[at]];
      const std::string path = (fs::path(dir) / entry.path).string();
      if (auto open = options.open_files.find(entry.path); open != options.open_files.end()) {
        if (options.content_keys) entry.content_keys = open->second.content_keys;
        hash_open_file(open->second.fd, entry);
      } else {
        detail::hash_file(path, entry, options.content_keys);
      }
    }
  };
  const unsigned cores = options.threads ? options.threads : detail::usable_cores();
  const size_t threads = std::min<size_t>(cores, order.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();

  FolderDigests out;
  out.files = std::move(entries);
  for (const FileDigest& file : out.files) {
    if (file.kind == FolderEntryKind::File && file.error.empty()) out.bytes += file.size;
  }
  return out;
}

}  // namespace ptb
