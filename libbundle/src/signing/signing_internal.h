// Shared by the signing/*.cc files; private to libbundle.
#pragma once

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
void hash_file(const std::string& path, FileDigest& file, bool content_keys);
// The same through an open descriptor, which stays open.
void hash_descriptor(int fd, FileDigest& file);
// content_keys_of (folder_digests.h) of the file open at `fd`, which stays
// open: the keys of the very file a caller then hashes through `fd`.
std::vector<ContentKeyDigest> content_keys_of_descriptor(int fd, const std::string& path);

// Cores this process may run on.
unsigned usable_cores();

}  // namespace ptb::detail
