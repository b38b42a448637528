// `ptbundle pull REF -o DIR`: a bundle pushed as a ModelPack artifact
// (modelpack.h) brought into DIR.
//  - The manifest is fetched (at most 4 MiB) and its digest computed; a
//    digest in REF must match it, and so must the registry's
//    Docker-Content-Digest when it sends one.
//  - The artifact must be a bundle: a ModelPack model whose layers are
//    bundle.json, signatures (*.sig) and exactly the files bundle.json lists,
//    each raw (uncompressed) with the digest and size bundle.json records. A
//    ModelPack model of another tool, a packed (tar) layer, a path leading out
//    of DIR, a file bundle.json does not list: each is refused, naming it.
//  - bundle.json is fetched first (its digest checked) and read; then each
//    file streams into a temporary file in DIR, its SHA-256 computed as it
//    arrives and compared, with its size, before it is kept. A file DIR
//    already holds under the same path with the same recorded digest is
//    hashed and, when it matches, kept rather than fetched again.
//  - With keys (or require_signature), the signature must verify with one of
//    them and list exactly the files pulled, with their digests, before
//    anything is placed.
//  - Everything is placed through BundleTransaction (bundle/transaction.h):
//    the lock, the journal, bundle.json (the exact bytes fetched, which the
//    signature covers) renamed last. A failure or SIGINT/SIGTERM before the
//    commit leaves DIR as it was, with no temporary file. A file whose path
//    the previous bundle in DIR used for other bytes is renamed over it
//    inside the commit (signals wait for it); only a power cut there leaves
//    the previous bundle.json beside a new file, which verify reports and
//    the next pull replaces.
//  - With `part`, only bundle.json, the signature and that part's files are
//    fetched (bundle.json still lists every part).
// verify's checks of the result (GPU, test cases) are the CLI's next step;
// the files pulled are held for it (PullReport::written).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/integrity/integrity.h"  // WrittenDigest
#include "ptbundle/registry/push.h"  // TransferredBlob
#include "ptbundle/registry/registry.h"
#include "ptbundle/signing/keys.h"

namespace ptb {

struct PullOptions {
  std::string reference;
  std::string output_dir;
  RegistryOptions registry;
  std::vector<PublicKey> keys;
  bool require_signature = false;
  std::optional<std::string> part;
};

// schemas/pull.schema.json (the CLI adds verify's verdict).
struct PullReport {
  std::string reference;
  std::string digest;  // of the manifest
  std::string directory;
  std::optional<std::string> part;
  std::optional<std::string> signed_by;  // the key fingerprint the signature verified with, before placing
  std::vector<TransferredBlob> files;
  size_t downloaded = 0, kept = 0;
  uint64_t downloaded_bytes = 0;
  // The files this pull wrote and still holds, with the digests checked as
  // their bytes arrived, by path in DIR: for verify (VerifyOptions::written),
  // not reported. Released with the report.
  std::map<std::string, WrittenDigest> written;
  template <class F>
  void fields(F& f) const {
    f("reference", reference)("digest", digest)("directory", directory)("part", part)("signed_by", signed_by)(
        "files", files)("downloaded", downloaded)("downloaded_bytes", downloaded_bytes)("kept", kept);
  }
};

Result<PullReport> pull_bundle(const PullOptions& options);

}  // namespace ptb
