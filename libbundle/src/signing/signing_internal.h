// Shared by the signing/*.cc files; private to libbundle.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/signing/folder_digests.h"

namespace ptb::detail {

// The entries of `dir` (regular files, symbolic links, anything else), not
// yet hashed, in signing order.
Result<std::vector<FileDigest>> list_folder(const std::string& dir, const std::vector<std::string>& ignore);

// Hashes `file` (a regular file at `path`) and its content_keys in one read.
void hash_file(const std::string& path, FileDigest& file, ProgressCounter* progress);
// The same through an open descriptor, which stays open.
void hash_descriptor(int fd, FileDigest& file, ProgressCounter* progress);

// Cores this process may run on.
unsigned usable_cores();

}  // namespace ptb::detail
