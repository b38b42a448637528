// hash_folder: the folder's files hashed in parallel, largest first.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <filesystem>
#include <functional>
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

  // Sizes first: hash_largest_first starts with the largest.
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
  uint64_t to_hash = 0;
  for (size_t i : order) {
    auto open = options.open_files.find(entries[i].path);
    if (open == options.open_files.end() || open->second.sha256.empty()) {
      to_hash += entries[i].size;
    } else if (options.content_keys) {
      for (const ContentKeyDigest& key : open->second.content_keys) to_hash += key.size;
    }
  }
  ProgressCounter progress(options.progress, to_hash, "hashing " + dir);
  detail::hash_largest_first(
      order.size(), [&](size_t at) { return entries[order[at]].size; },
      [&](size_t at) {
        FileDigest& entry = entries[order[at]];
        const std::string path = (fs::path(dir) / entry.path).string();
        if (auto open = options.open_files.find(entry.path); open != options.open_files.end()) {
          if (options.content_keys) entry.content_keys = open->second.content_keys;
          if (open->second.sha256.empty()) {
            hash_open_file(open->second.fd, entry, &progress);
          } else {
            detail::hash_key_ranges(open->second.fd, entry, &progress);
            if (entry.error.empty()) entry.sha256 = open->second.sha256;
          }
        } else {
          detail::hash_file(path, entry, options.content_keys, &progress);
        }
      },
      options.threads);

  FolderDigests out;
  out.files = std::move(entries);
  for (const FileDigest& file : out.files) {
    if (file.kind == FolderEntryKind::File && file.error.empty()) out.bytes += file.size;
  }
  return out;
}

void hash_open_files(const std::vector<OpenFileToHash>& files, unsigned threads, const Progress& progress,
                     const std::string& what) {
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (const OpenFileToHash& open : files) {
    struct stat info {};
    sizes.push_back(::fstat(open.fd, &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0);
    total += sizes.back();
  }
  ProgressCounter counter(progress, total, what);
  detail::hash_largest_first(
      files.size(), [&](size_t at) { return sizes[at]; },
      [&](size_t at) { hash_open_file(files[at].fd, *files[at].file, &counter); }, threads);
}

namespace detail {

void hash_largest_first(size_t count, const std::function<uint64_t(size_t)>& size_of,
                        const std::function<void(size_t)>& hash, unsigned threads) {
  // The schedule starts with the largest files, so that the last file to
  // finish is a small one and every core stays busy to the end.
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size_of(a) > size_of(b); });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t at = next.fetch_add(1); at < order.size(); at = next.fetch_add(1)) hash(order[at]);
  };
  const size_t pool_size = std::min<size_t>(threads ? threads : usable_cores(), count);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < pool_size; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

}  // namespace detail
}  // namespace ptb
