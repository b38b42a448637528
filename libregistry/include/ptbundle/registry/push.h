// `ptbundle push BUNDLE REF`: the bundle checked as verify checks it (names,
// every file's size and SHA-256 against bundle.json, content keys, the
// signature with the keys given), then sent as one ModelPack artifact
// (modelpack.h). The folder's read lock is held from before the checks to the
// end, so no ptbundle writer changes it in between; each blob is sent from
// the descriptor bundle.json's entry was opened through, under the digest
// bundle.json records (the registry checks that digest against the bytes it
// receives, so nothing is hashed twice here and nothing but verified bytes
// can be stored under it). Blobs the repository has are not sent (HEAD);
// with mount_from, a blob another repository of the registry holds is
// mounted instead of sent. Blobs over `chunk_bytes` go in chunks (PATCH with
// Content-Range, then PUT ?digest=).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/registry/registry.h"
#include "ptbundle/signing/keys.h"

namespace ptb {

struct PushOptions {
  std::string bundle_dir;
  std::string reference;
  RegistryOptions registry;
  std::vector<PublicKey> keys;          // the signature must verify with one (integrity.h)
  bool require_signature = false;
  std::vector<std::string> mount_from;  // repositories of the same registry
  uint64_t chunk_bytes = 64ull << 20;
  unsigned threads = 0;                 // hashing threads of the checks; 0: one per core
};

// One blob of the artifact and what became of it.
struct TransferredBlob {
  std::string path;  // in the bundle; "(config)" for the ModelPack config
  std::string media_type;
  std::string digest;
  uint64_t size = 0;
  std::string action;  // push: "uploaded", "existing", "mounted"; pull: "downloaded", "kept"
  template <class F>
  void fields(F& f) const {
    f("path", path)("media_type", media_type)("digest", digest)("size", size)("action", action);
  }
};

// schemas/push.schema.json.
struct PushReport {
  std::string reference;  // as resolved: registry/repository:tag
  std::string registry;
  std::string repository;
  std::optional<std::string> tag;
  std::string digest;  // of the manifest
  uint64_t manifest_size = 0;
  std::optional<std::string> signed_by;  // the key fingerprint the signature verified with
  std::vector<TransferredBlob> blobs;
  size_t uploaded = 0, existing = 0, mounted = 0;
  uint64_t uploaded_bytes = 0;
  template <class F>
  void fields(F& f) const {
    f("reference", reference)("registry", registry)("repository", repository)("tag", tag)("digest", digest)(
        "manifest_size", manifest_size)("signed_by", signed_by)("blobs", blobs)("uploaded", uploaded)(
        "uploaded_bytes", uploaded_bytes)("existing", existing)("mounted", mounted);
  }
};

Result<PushReport> push_bundle(const PushOptions& options);

}  // namespace ptb
