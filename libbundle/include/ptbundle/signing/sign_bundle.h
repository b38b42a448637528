// `ptbundle sign`: a signature over every file of a bundle folder, written
// into the folder in the model-signing format (model_signature.h), and what
// the writers do with a signature their change makes invalid.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/progress.h"
#include "ptbundle/base/result.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {

struct SignOptions {
  std::string bundle_dir;
  std::string key_path;                      // PEM private key
  std::optional<std::string> password_file;  // its first line decrypts the key
  std::string output_name = kDefaultSignatureName;  // a file name ending in ".sig", inside the bundle
  unsigned threads = 0;                      // hashing threads; 0: one per core
  Progress progress;                         // the bundle's bytes as they are hashed
};

// A file (or the subject) and its SHA-256, as sign's report lists them.
struct SignReportEntry {
  const char* key = "path";  // "path" for a file, "name" for the subject
  std::string name;
  std::string sha256;
  template <class F>
  void fields(F& f) const {
    f(key, name)("sha256", sha256);
  }
};

// What sign did. fields(F&) describes it to a report printer, as every
// library report does (inspect_model.h): schemas/sign.schema.json.
struct SignReport {
  std::string signature_path;
  std::string key_fingerprint;
  std::string curve;  // "P-256"
  std::string hash;   // "SHA-256"
  SignedStatement statement;
  uint64_t bytes = 0;  // hashed

  template <class F>
  void fields(F& f) const {
    std::vector<SignReportEntry> files;
    for (const SignedResource& resource : statement.resources) files.push_back({"path", resource.name, resource.sha256});
    f("signature", signature_path)("format", "model_signing")("media_type", kSigstoreBundleMediaType)(
        "predicate_type", kModelSigningPredicateType)("key_fingerprint", key_fingerprint)("curve", curve)("hash", hash)(
        "subject", SignReportEntry{"name", statement.subject_name, statement.subject_sha256})(
        "ignore_paths", statement.ignore_paths)("bytes", bytes)("files", files);
  }
};

// Hashes the folder (the signature file and git's files left out, as
// model_signing does), refuses a bundle whose files disagree with bundle.json
// or whose content-addressed keys disagree with their bytes, signs, and
// writes the signature atomically.
Result<SignReport> sign_bundle(const SignOptions& options);

// Writers call this after they changed files of a bundle: every signature
// file in the bundle that holds `changed_path` (the bundle folder itself, or
// a file in it, in testcases/ or in a GPU-target folder) is removed, since
// the bundle no longer matches it. Returns the paths removed.
std::vector<std::string> remove_invalidated_signatures(const std::string& changed_path);

}  // namespace ptb
