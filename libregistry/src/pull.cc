#include "ptbundle/registry/pull.h"

#include <map>
#include <optional>
#include <set>

#include "registry_client.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/registry/modelpack.h"
#include "ptbundle/registry/reference.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

constexpr uint64_t kMaxBundleJsonBytes = 16 << 20;

bool raw_media_type(const std::string& type) {
  return type == kModelPackWeightRaw || type == kModelPackWeightConfigRaw || type == kModelPackDatasetRaw ||
         type == "application/vnd.cncf.model.code.v1.raw" || type == "application/vnd.cncf.model.doc.v1.raw";
}

// A top-level signature file's name: "bundle.sig", "alt.sig".
bool is_signature_path(const std::string& path) {
  return path.ends_with(".sig") && path.size() > 4 && path.find('/') == std::string::npos && path.front() != '.';
}

std::string hex_of(const std::string& digest) { return digest.substr(7); }

// Streams one blob into `sink`, counting and hashing; checks size and digest.
struct Received {
  uint64_t bytes = 0;
  Sha256 hash;
};

Status fetch_checked(detail::RegistryClient& client, const ArtifactLayer& layer, const std::function<Status(Bytes)>& write,
                     const std::function<void(uint64_t, uint64_t)>& progress) {
  Received got;
  const std::string what = client.reference().registry + ": blob " + layer.digest + " (" + clipped(layer.path) + ")";
  auto sink = [&](Bytes piece) -> Status {
    if (piece.size() > layer.size - got.bytes)
      return invalid(what + ": the registry sends more than the " + std::to_string(layer.size) + " bytes the manifest records");
    got.bytes += piece.size();
    got.hash.update(piece);
    return write(piece);
  };
  if (auto status = client.get_blob(layer.digest, sink, progress); !status.ok()) {
    Error error = status.error();
    // The transfer broke off: say how far it came.
    if (error.kind == ErrorKind::Io && got.bytes < layer.size)
      error.message = what + ": truncated: " + std::to_string(got.bytes) + " of " + std::to_string(layer.size) +
                      " bytes arrived: " + error.message;
    return error;
  }
  if (got.bytes != layer.size)
    return invalid(what + ": truncated: " + std::to_string(got.bytes) + " of " + std::to_string(layer.size) + " bytes arrived");
  const std::string actual = "sha256:" + to_hex(got.hash.finish());
  if (actual != layer.digest) return invalid(what + ": the bytes received hash to " + actual + "; expected " + layer.digest);
  return {};
}

// The artifact must be a bundle; says why not.
Result<const ArtifactLayer*> find_bundle_json(const ArtifactManifest& artifact, const std::string& where) {
  if (artifact.artifact_type != kModelPackArtifactType && artifact.config_media_type != kModelPackConfigMediaType)
    return invalid(where + ": not a ModelPack model (artifactType " + in_quotes(artifact.artifact_type) +
                   ", config " + in_quotes(artifact.config_media_type) + "); expected artifactType " +
                   kModelPackArtifactType);
  const ArtifactLayer* found = nullptr;
  std::vector<std::string> names;
  for (const auto& layer : artifact.layers) {
    if (layer.path == kManifestFileName) found = &layer;
    if (names.size() < 8) names.push_back(layer.path);
  }
  if (!found)
    return invalid(where + ": a ModelPack model without bundle.json (its files: " + join(names, ", ") +
                   "); ptbundle pulls bundles, which `ptbundle push` sends with their bundle.json");
  for (const auto& layer : artifact.layers) {
    const bool ok = layer.path == kManifestFileName
                        ? layer.media_type == kPtbundleManifestMediaType || layer.media_type == kModelPackWeightConfigRaw
                    : is_signature_path(layer.path) ? layer.media_type == kSigstoreBundleMediaType || raw_media_type(layer.media_type)
                                                    : raw_media_type(layer.media_type);
    if (!ok)
      return invalid(where + ": layer " + in_quotes(layer.path) + " has media type " + in_quotes(layer.media_type) +
                     (layer.media_type.find(".tar") != std::string::npos
                          ? "; a packed layer: ptbundle pulls only raw (unarchived, uncompressed) files, whose digest is the file's"
                          : "; expected a ModelPack raw type (" + std::string(kModelPackWeightRaw) + ", ...)"));
  }
  return found;
}

}  // namespace

Result<PullReport> pull_bundle(const PullOptions& options) {
  PTB_TRY(Reference ref, parse_reference(options.reference));
  if (options.output_dir.empty()) return usage_error("pull: -o DIR is required");
  PTB_TRY(auto client, detail::RegistryClient::open(ref, options.registry, false));
  const std::string where = ref.text();

  PTB_TRY(auto fetched, client.get_manifest(ref.manifest_name(), kMaxRegistryManifestBytes));
  const std::string digest =
      "sha256:" + to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(fetched.body.data()), fetched.body.size())));
  if (ref.digest && *ref.digest != digest)
    return invalid(where + ": the manifest received hashes to " + digest + "; the reference pins " + *ref.digest);
  if (!fetched.digest_header.empty() && fetched.digest_header != digest)
    return invalid(where + ": the registry names the manifest " + in_quotes(fetched.digest_header) +
                   " (Docker-Content-Digest) but its bytes hash to " + digest);
  PTB_TRY(ArtifactManifest artifact, parse_artifact_manifest(fetched.body, where + " manifest"));
  PTB_TRY(const ArtifactLayer* json_layer, find_bundle_json(artifact, where));
  if (json_layer->size > kMaxBundleJsonBytes)
    return invalid(where + ": bundle.json is " + std::to_string(json_layer->size) + " bytes; expected at most 16 MiB");

  // bundle.json, checked against its digest, then read.
  std::string json_text;
  PTB_CHECK(fetch_checked(client, *json_layer, [&](Bytes piece) -> Status {
    json_text.append(reinterpret_cast<const char*>(piece.data()), piece.size());
    return {};
  }, {}));
  PTB_TRY(Manifest manifest, parse_manifest(json_text, where + ": bundle.json"));

  // Which files to fetch, each matched with its layer.
  std::map<std::string, const ArtifactLayer*> by_path;
  for (const auto& layer : artifact.layers) by_path[layer.path] = &layer;
  std::set<std::string> listed;
  for (const auto& part : manifest.parts)
    for (const auto& file : part.files) listed.insert(file.path);
  // The tune file, whichever parts are pulled: its choices are per shape.
  std::optional<ManifestFile> tune;
  if (manifest.tune) {
    tune.emplace();
    tune->path = manifest.tune->path;
    tune->size = manifest.tune->size;
    tune->sha256 = manifest.tune->sha256;
    listed.insert(tune->path);
  }
  std::vector<std::pair<const ManifestFile*, const ArtifactLayer*>> wanted;
  if (options.part && !manifest.find_part(*options.part)) {
    std::vector<std::string> names;
    for (const auto& part : manifest.parts) names.push_back(part.name);
    return usage_error("--part " + in_quotes(*options.part) + ": the bundle has no such part; its parts: " + join(names, ", "));
  }
  auto layer_of = [&](const ManifestFile& file) -> Result<const ArtifactLayer*> {
    auto layer = by_path.find(file.path);
    if (layer == by_path.end()) return invalid(where + ": bundle.json lists " + in_quotes(file.path) + "; the artifact has no layer for it");
    if (layer->second->digest != "sha256:" + file.sha256 || layer->second->size != file.size)
      return invalid(where + ": layer " + in_quotes(file.path) + " is " + layer->second->digest + ", " +
                     std::to_string(layer->second->size) + " bytes; bundle.json records sha256:" + file.sha256 + ", " +
                     std::to_string(file.size) + " bytes");
    return layer->second;
  };
  for (const auto& part : manifest.parts) {
    for (const auto& file : part.files) {
      PTB_TRY(const ArtifactLayer* layer, layer_of(file));
      if (!options.part || part.name == *options.part) wanted.emplace_back(&file, layer);
    }
  }
  if (tune) {
    PTB_TRY(const ArtifactLayer* layer, layer_of(*tune));
    wanted.emplace_back(&*tune, layer);
  }
  std::vector<const ArtifactLayer*> signatures;
  for (const auto& layer : artifact.layers) {
    if (layer.path == kManifestFileName || listed.count(layer.path)) continue;
    if (is_signature_path(layer.path) && signatures.size() < 4 && layer.size <= kMaxSignatureFileBytes) {
      signatures.push_back(&layer);
      continue;
    }
    return invalid(where + ": layer " + in_quotes(layer.path) +
                   " is no file bundle.json lists, nor a signature (a top-level *.sig of at most 1 MiB, 4 at most)");
  }

  PTB_TRY(auto transaction, BundleTransaction::begin(options.output_dir, true, bundle_lock_wait()));
  // A pull that fails into a folder it created leaves no folder (declared
  // before the outputs, so their temporary files are gone first).
  struct RemoveIfUnused {
    BundleTransaction& t;
    bool committed = false;
    ~RemoveIfUnused() {
      if (!committed) t.remove_if_unused();
    }
  } cleanup{transaction};
  const BundleDir& dir = transaction.dir();
  PullReport report;
  report.reference = where;
  report.digest = digest;
  report.directory = options.output_dir;
  report.part = options.part;
  const Manifest* old = transaction.manifest() ? &*transaction.manifest() : nullptr;

  std::vector<AtomicOutput> outputs;
  outputs.reserve(wanted.size() + signatures.size());
  std::vector<BundleTransaction::Placement> placements;
  std::map<std::string, std::string> have;  // path -> hex digest, of what DIR will hold from this pull
  auto download = [&](const ArtifactLayer& layer, std::string* capture) -> Status {
    if (size_t slash = layer.path.find('/'); slash != std::string::npos) PTB_CHECK(dir.make_folder(layer.path.substr(0, slash)));
    PTB_TRY(AtomicOutput out, AtomicOutput::create_in(dir, layer.path));
    out.guard_writes();
    PTB_CHECK(fetch_checked(client, layer, [&](Bytes piece) {
      if (capture) capture->append(reinterpret_cast<const char*>(piece.data()), piece.size());
      return out.write(piece);
    }, progress_step(options.registry.progress, "pulling " + layer.path)));
    // The digest just checked is of the bytes written: where the file is
    // held unchanged from here on, verify takes it rather than hashing the
    // file again (WrittenDigest).
    PTB_TRY(std::shared_ptr<const HeldFile> held, out.finish());
    if (held) report.written[layer.path] = {std::move(held), hex_of(layer.digest)};
    outputs.push_back(std::move(out));
    placements.push_back({layer.path, nullptr});
    report.files.push_back({layer.path, layer.media_type, layer.digest, layer.size, "downloaded"});
    ++report.downloaded;
    report.downloaded_bytes += layer.size;
    return {};
  };
  for (const auto& [file, layer] : wanted) {
    bool keep = false;
    if (old) {
      for (const auto& part : old->parts)
        for (const auto& f : part.files)
          if (f.path == file->path && f.sha256 == file->sha256 && f.size == file->size) keep = true;
      if (old->tune && old->tune->path == file->path && old->tune->sha256 == file->sha256 && old->tune->size == file->size)
        keep = true;
    }
    if (keep) {
      // Listed with the same digest: kept if its bytes still hash to it.
      auto mapped = MappedFile::open_in(dir, file->path);
      keep = mapped.ok() && mapped->size() == file->size && sha256_file_range(*mapped, 0, file->size).value_or("") == file->sha256;
    }
    if (keep) {
      report.files.push_back({file->path, layer->media_type, layer->digest, layer->size, "kept"});
      ++report.kept;
    } else {
      PTB_CHECK(download(*layer, nullptr));
    }
    have[file->path] = file->sha256;
  }
  std::map<std::string, std::string> signature_texts;  // path -> bytes
  for (const ArtifactLayer* layer : signatures) {
    PTB_CHECK(download(*layer, &signature_texts[layer->path]));
    have[layer->path] = hex_of(layer->digest);
  }
  have[kManifestFileName] = hex_of(json_layer->digest);
  for (size_t i = 0; i < placements.size(); ++i) placements[i].output = &outputs[i];

  // The signature, checked before anything is placed.
  const ArtifactLayer* signature = nullptr;
  for (const ArtifactLayer* layer : signatures)
    if (!signature || layer->path == kDefaultSignatureName) signature = layer;
  if (!options.keys.empty() || options.require_signature) {
    if (!signature) return invalid(where + ": the artifact carries no signature (bundle.sig); --key/--require-signature need one");
    if (options.keys.empty())
      return usage_error(where + ": --require-signature: the bundle is signed but no --key or --keys-dir was given to check it");
    const std::string& text = signature_texts[signature->path];
    PTB_TRY(SignatureFile parsed, parse_signature(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
                                                  where + ": " + signature->path));
    PTB_TRY(const PublicKey* key, verify_signature(parsed, options.keys));
    if (!parsed.statement_error.empty()) return invalid(where + ": " + signature->path + ": " + parsed.statement_error);
    std::map<std::string, std::string> signed_files;
    for (const auto& r : parsed.statement.resources) signed_files[r.name] = r.sha256;
    for (const auto& [path, sha] : have) {
      if (is_signature_path(path)) continue;
      auto s = signed_files.find(path);
      if (s == signed_files.end()) return invalid(where + ": " + in_quotes(path) + " is not among the files " + signature->path + " signs");
      if (s->second != sha)
        return invalid(where + ": " + in_quotes(path) + " is sha256:" + sha + "; " + signature->path + " signs sha256:" + s->second);
    }
    for (const auto& [path, sha] : signed_files) {
      if (have.count(path)) continue;
      if (!(options.part && listed.count(path)))
        return invalid(where + ": " + signature->path + " signs " + in_quotes(path) + ", which the artifact does not hold");
    }
    report.signed_by = key->fingerprint();
  }

  // What the previous bundle held that this one does not.
  std::vector<std::string> superseded;
  if (old) {
    for (const auto& part : old->parts)
      for (const auto& f : part.files)
        if (!listed.count(f.path)) superseded.push_back(f.path);
    if (old->tune && !listed.count(old->tune->path)) superseded.push_back(old->tune->path);
  }
  for (const auto& name : find_signature_files(dir))
    if (!have.count(name)) superseded.push_back(name);
  PTB_TRY(AtomicOutput json_out, AtomicOutput::create_in(dir, kManifestFileName));
  PTB_CHECK(json_out.write(Bytes(reinterpret_cast<const uint8_t*>(json_text.data()), json_text.size())));
  PTB_CHECK(transaction.commit(placements, manifest, superseded, &json_out));
  cleanup.committed = true;
  return report;
}

}  // namespace ptb
