#include "ptbundle/registry/push.h"

#include "registry_client.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/registry/modelpack.h"
#include "ptbundle/registry/reference.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

// The checks verify runs without a GPU; the first failure refuses the push.
Status check_before_push(const PushOptions& options, SignatureSummary& signature) {
  CheckList checks;
  IntegrityOptions integrity;
  integrity.keys = options.keys;
  integrity.threads = options.threads;
  integrity.require_signature = options.require_signature;
  (void)check_integrity(options.bundle_dir, checks, integrity, &signature);
  const size_t failed = checks.count(CheckStatus::Fail);
  for (const auto& outcome : checks.outcomes()) {
    if (outcome.status != CheckStatus::Fail) continue;
    return invalid(options.bundle_dir + ": not pushed: verify fails it: " + outcome.check + " " + outcome.subject + ": " +
                   outcome.message + (failed > 1 ? " (and " + std::to_string(failed - 1) + " more; `ptbundle verify` lists them)" : ""));
  }
  return {};
}

struct Source {
  ArtifactLayer layer;
  MappedFile file;
};

Result<Source> small_file(const BundleDir& dir, const std::string& path) {
  Source s;
  PTB_TRY(s.file, MappedFile::open_in(dir, path));
  s.layer.path = path;
  s.layer.media_type = bundle_file_media_type(path);
  s.layer.size = s.file.size();
  s.layer.digest = "sha256:" + to_hex(sha256(s.file.bytes()));
  return s;
}

std::string last_component(const std::string& repository) {
  const size_t slash = repository.rfind('/');
  return slash == std::string::npos ? repository : repository.substr(slash + 1);
}

}  // namespace

Result<PushReport> push_bundle(const PushOptions& options) {
  PTB_TRY(Reference ref, parse_reference(options.reference));
  if (options.chunk_bytes < (1 << 20)) return usage_error("--chunk-size: at least 1 MiB");
  PTB_TRY(BundleDir dir, BundleDir::open(options.bundle_dir));
  if (dir.kind(kManifestFileName).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::Missing)
    return folder_without_manifest(options.bundle_dir);
  // Held to the end: no ptbundle writer changes the folder between the
  // checks and the last byte sent.
  PTB_TRY(BundleReadLock lock, acquire_read_lock(dir));
  SignatureSummary signature;
  PTB_CHECK(check_before_push(options, signature));

  // bundle.json parsed from the bytes that are sent.
  PTB_TRY(Source manifest_source, small_file(dir, kManifestFileName));
  const Bytes manifest_bytes = manifest_source.file.bytes();
  PTB_TRY(Manifest manifest, parse_manifest(std::string_view(reinterpret_cast<const char*>(manifest_bytes.data()),
                                                             manifest_bytes.size()),
                                            dir.display(kManifestFileName)));
  std::vector<Source> sources;
  sources.push_back(std::move(manifest_source));
  // A file bundle.json lists, sent from the descriptor opened here.
  auto add_listed = [&](const ManifestFile& file, const std::string& part) -> Status {
    Source s;
    PTB_TRY(s.file, open_listed_file(dir, file));
    if (s.file.size() != file.size)
      return invalid(dir.display(file.path) + ": " + std::to_string(s.file.size()) + " bytes; bundle.json records " +
                     std::to_string(file.size) + " (the file changed after it was checked)");
    s.layer.path = file.path;
    s.layer.media_type = bundle_file_media_type(file.path);
    s.layer.size = file.size;
    s.layer.digest = "sha256:" + file.sha256;  // checked by verify above, and by the registry on upload
    s.layer.part = part;
    sources.push_back(std::move(s));
    return {};
  };
  for (const auto& part : manifest.parts)
    for (const auto& file : part.files) PTB_CHECK(add_listed(file, part.name));
  // The tune file (ptbundle tune), which bundle.json lists beside the parts.
  if (manifest.tune) {
    ManifestFile tune;
    tune.path = manifest.tune->path;
    tune.size = manifest.tune->size;
    tune.sha256 = manifest.tune->sha256;
    PTB_CHECK(add_listed(tune, ""));
  }
  // The signature verify checked (bundle.sig where present).
  if (auto name = signature_to_check(dir)) {
    PTB_TRY(Source s, small_file(dir, *name));
    sources.push_back(std::move(s));
  }

  std::vector<ArtifactLayer> layers;
  for (const auto& s : sources) layers.push_back(s.layer);
  const std::string config = modelpack_config(manifest, layers, last_component(ref.repository));
  const std::string body = modelpack_manifest(manifest, config, layers);
  const std::string digest =
      "sha256:" + to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size())));
  if (ref.digest && *ref.digest != digest)
    return usage_error("reference " + ref.text() + ": the bundle's manifest has the digest " + digest +
                       "; a digest in REF must be the one pushed (or give a tag)");

  PushReport report;
  report.reference = ref.text();
  report.registry = ref.registry;
  report.repository = ref.repository;
  report.tag = ref.tag;
  report.digest = digest;
  report.manifest_size = body.size();
  if (signature.verified) report.signed_by = signature.key_fingerprint;

  PTB_TRY(auto client, detail::RegistryClient::open(ref, options.registry, true));
  auto record = [&](const ArtifactLayer& layer, detail::UploadAction action) {
    report.blobs.push_back({layer.path, layer.media_type, layer.digest, layer.size, detail::upload_action_name(action)});
    if (action == detail::UploadAction::Uploaded) {
      ++report.uploaded;
      report.uploaded_bytes += layer.size;
    } else if (action == detail::UploadAction::Mounted) {
      ++report.mounted;
    } else {
      ++report.existing;
    }
  };
  {
    detail::BlobBody blob;
    blob.text = config;
    ArtifactLayer layer;
    layer.path = "(config)";
    layer.media_type = kModelPackConfigMediaType;
    layer.size = config.size();
    layer.digest = "sha256:" + to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(config.data()), config.size())));
    PTB_TRY(auto action, client.put_blob(blob, layer.digest, options.mount_from, options.chunk_bytes, {}));
    record(layer, action);
  }
  for (const auto& s : sources) {
    detail::BlobBody blob;
    blob.fd = s.file.fd();
    blob.size = s.layer.size;
    PTB_TRY(auto action, client.put_blob(blob, s.layer.digest, options.mount_from, options.chunk_bytes,
                                         progress_step(options.registry.progress, "pushing " + s.layer.path)));
    record(s.layer, action);
  }
  PTB_TRY(std::string answered, client.put_manifest(body, ref.manifest_name(), kOciImageManifestMediaType));
  if (!answered.empty() && answered != digest)
    return invalid(ref.registry + ": the registry stored the manifest as " + in_quotes(answered) + "; expected " + digest);
  return report;
}

}  // namespace ptb
