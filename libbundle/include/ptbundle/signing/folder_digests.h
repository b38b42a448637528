// The SHA-256 of every file of a bundle folder, computed once for everything
// that needs it: the signature (which lists every file), bundle.json's
// recorded digests, and the content-addressed keys ExecuTorch writes
// ("<sha256>_so_blob", "<sha256>_weights_blob"), whose bytes must hash to the
// name they are stored under.
//
// Speed: files are hashed in parallel, one thread per core, largest first so
// that a big file does not start last. One file's SHA-256 is one sequential
// stream and stays so: bundle.json and the OpenSSF model-signing "files"
// serialization both record the digest of the whole file, and splitting it
// into shards would change both formats. A lone large file is therefore hashed
// at one core's rate; what can run beside it does: the content-addressed blobs
// inside it are hashed by a second thread from the same buffers as the file
// (read once, each byte hashed by both streams while it is in cache).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptbundle/base/progress.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

class ProgramWithData;

// A key named by the SHA-256 of its bytes, and what the bytes hash to.
struct ContentKeyDigest {
  std::string key;
  std::string where;     // "named data" (.pte) or "data file" (.ptd)
  uint64_t offset = 0;   // in the file
  uint64_t size = 0;
  std::string expected;  // the 64 hex digits of the key
  std::string actual;    // SHA-256 of the bytes

  bool matches() const { return expected == actual; }
};

enum class FolderEntryKind { File, Symlink, Other };

struct FileDigest {
  std::string path;  // relative to the folder, components joined with '/'
  FolderEntryKind kind = FolderEntryKind::File;
  uint64_t size = 0;
  std::string sha256;  // hex; empty when the file could not be read (see error)
  std::string error;   // why it could not be read
  std::vector<ContentKeyDigest> content_keys;
};

struct FolderHashOptions {
  // Paths relative to the folder, each ignoring itself and everything under
  // it (".git" ignores ".git/config"), as model_signing's ignore list does.
  std::vector<std::string> ignore;
  unsigned threads = 0;  // 0: one per core
  bool content_keys = true;  // also hash the content-addressed blobs (benchmarks turn it off to compare)
  // Sizes the caller expects (verify: bundle.json's), by relative path: a
  // file of another size is not hashed at all (its error says why), so that a
  // sparse 1 TiB file bundle.json records as smaller costs no read.
  std::map<std::string, uint64_t> expected_sizes;
  // When set, only these paths are hashed; any other file is listed with its
  // size and the error "not hashed" (verify: a file neither bundle.json nor
  // the signature lists needs no digest to be reported, so a sparse 20 GiB
  // file planted in the folder costs no read).
  std::optional<std::set<std::string>> hash_only;
  // Files the caller holds open, by relative path: hashed through that
  // descriptor (the file the caller reads, whatever a rename has put at the
  // path since) rather than opened again by path, with the content keys the
  // caller found in it. The caller keeps the descriptors open.
  // `sha256`, when set, is the file's digest as the caller proved it (a file
  // it wrote and held unchanged since, WrittenDigest): only the content keys'
  // ranges are read.
  struct OpenFile {
    int fd = -1;
    std::vector<ContentKeyDigest> content_keys;
    std::string sha256;
  };
  std::map<std::string, OpenFile> open_files;
  // Bytes hashed of all the files to hash, as one step "hashing DIR".
  Progress progress;
};

struct FolderDigests {
  std::vector<FileDigest> files;  // in signing order (signing_order_less)
  uint64_t bytes = 0;             // total size of the regular files hashed

  const FileDigest* find(const std::string& path) const;
};

// Walks `dir` (symbolic links are recorded, never followed) and hashes every
// regular file that is not ignored. Fails only when `dir` cannot be listed;
// a file that cannot be read is recorded with its error.
Result<FolderDigests> hash_folder(const std::string& dir, const FolderHashOptions& options = {});

// True when `relative` is `ignored` or lies under it, comparing whole
// components ("a" covers "a/b", not "ab").
bool path_is_under(const std::string& relative, const std::string& ignored);

// The order model_signing lists resources in: by path components, each
// compared byte by byte (Python's PurePosixPath ordering), so "a/b" sorts
// before "a.b".
bool signing_order_less(const std::string& a, const std::string& b);

// The keys of a .pte's named data or a .ptd's entries that name their bytes
// by SHA-256, with where those bytes lie in the file. Empty for any other
// file, or one that does not open (its own checks report that).
std::vector<ContentKeyDigest> content_keys_of(const std::string& path);
// The same of a program or data file already opened (offsets in its file()).
class PteFile;
class PtdFile;
std::vector<ContentKeyDigest> content_keys_of(const PteFile& pte);
std::vector<ContentKeyDigest> content_keys_of(const PtdFile& ptd);

// One file's SHA-256 and its `file.content_keys` (offsets in the file) in one
// read through `fd`, which stays open; an error is recorded in `file.error`.
// A content key here is any byte range whose digest is wanted with the file's
// (inspect passes every segment and blob it shows, with no expected digest).
// `progress` (may be null) gets the bytes as they are read.
void hash_open_file(int fd, FileDigest& file, ProgressCounter* progress = nullptr);

// hash_open_file that also hands every chunk it read, in file order, to
// `copy` (export writes it into the bundle): the digests are of the very
// bytes copied, and the file is read once. `copy` returns an error message,
// or "" to go on; its error stops the read and becomes `file.error`.
using ChunkCopy = std::function<std::string(Bytes chunk)>;
void hash_open_file_copying(int fd, FileDigest& file, const ChunkCopy& copy);

// Several files the caller holds open, each hashed as hash_open_file hashes
// one, in parallel as hash_folder hashes a folder (one thread per core,
// largest first). The caller keeps the descriptors open.
struct OpenFileToHash {
  int fd = -1;
  FileDigest* file = nullptr;
};
// `progress` hears of the bytes read, as `what`.
void hash_open_files(const std::vector<OpenFileToHash>& files, unsigned threads = 0, const Progress& progress = {},
                     const std::string& what = "hashing");

// "<64 lowercase hex>_so_blob" or "<64 lowercase hex>_weights_blob".
bool is_content_addressed_key(const std::string& key);

// Every content-addressed key of a program's named data and of its data
// file, hashed: an error naming the file, the key and the digest found when
// the bytes do not hash to the key, as verify would report. For commands
// that carry such a program into a bundle (export, merge of .pte files), so
// that they never write one verify fails, nor give a replaced blob a new,
// matching key.
// DataFileKeys::CheckedByCopy leaves the data file's keys to the caller, which
// copies that file whole and checks its keys from the same read
// (hash_open_file_copying, then check_content_key).
enum class DataFileKeys { Check, CheckedByCopy };
Status check_program_content_keys(const ProgramWithData& program, DataFileKeys data_file_keys = DataFileKeys::Check,
                                  const Progress& progress = {});

// The error check_program_content_keys gives for a key of `path` whose bytes
// hash to something else; success where they match.
Status check_content_key(const std::string& path, const ContentKeyDigest& key);

}  // namespace ptb
