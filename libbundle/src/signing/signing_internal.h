// Shared by the signing/*.cc files; private to libbundle.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ptbundle/signing/folder_digests.h"

namespace ptb::detail {

// The entries of `dir` (regular files, symbolic links, anything else), not
// yet hashed, in signing order.
Result<std::vector<FileDigest>> list_folder(const std::string& dir, const std::vector<std::string>& ignore);

// Hashes `file` (a regular file at `path`) and, with `content_keys`, the
// content-addressed keys found in it, opened once: the keys are read from the
// file that is hashed, whatever is renamed to `path` meanwhile.
void hash_file(const std::string& path, FileDigest& file, bool content_keys, ProgressCounter* progress);
// The same through an open descriptor, which stays open; `copy`, where
// given, gets every chunk in file order (hash_open_file_copying).
void hash_descriptor(int fd, FileDigest& file, ProgressCounter* progress, const ChunkCopy* copy);
// Only the digests of `file.content_keys`, each range read once: for a file
// whose whole digest is already known (FolderHashOptions::OpenFile::sha256).
void hash_key_ranges(int fd, FileDigest& file, ProgressCounter* progress);
// content_keys_of (folder_digests.h) of the file open at `fd`, which stays
// open: the keys of the very file a caller then hashes through `fd`.
std::vector<ContentKeyDigest> content_keys_of_descriptor(int fd, const std::string& path);

// Calls hash(i) for i in [0, count), largest size_of(i) first, on `threads`
// threads (0: one per core).
void hash_largest_first(size_t count, const std::function<uint64_t(size_t)>& size_of,
                        const std::function<void(size_t)>& hash, unsigned threads);

// Cores this process may run on.
unsigned usable_cores();

}  // namespace ptb::detail
