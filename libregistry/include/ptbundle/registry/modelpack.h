// A bundle as an OCI artifact in the CNCF ModelPack format
// (github.com/modelpack/model-spec, v1): an OCI image manifest whose
// artifactType is ModelPack's model manifest, whose config is a ModelPack
// model config, and whose layers are the bundle's files, each uncompressed
// (ModelPack's ".raw" media types), its digest the file's SHA-256 and its
// path inside the bundle in the org.cncf.model.filepath annotation:
//   .pte / .ptd (programs, weights)  application/vnd.cncf.model.weight.v1.raw
//   testcases/*.ptd (inputs, outputs) application/vnd.cncf.model.dataset.v1.raw
//   bundle.json                      application/vnd.ptbundle.manifest.v1+json
//   bundle.sig (model signing)       application/vnd.dev.sigstore.bundle.v0.3+json
// ModelPack has no type for a manifest of files or a signature, so these two
// carry their own: the Sigstore bundle's registered one, and ours.
//
// ModelPack's config schema admits no fields of its own, so what ptbundle
// records beyond it (parts, their GPU targets, the bundle format version)
// goes into manifest annotations (org.ptbundle.*) and, for people, the
// config's descriptor.description. Each part file's layer also names its part
// (org.ptbundle.part).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/bundle/manifest.h"

namespace ptb {

inline constexpr const char* kModelPackArtifactType = "application/vnd.cncf.model.manifest.v1+json";
inline constexpr const char* kModelPackConfigMediaType = "application/vnd.cncf.model.config.v1+json";
inline constexpr const char* kModelPackWeightRaw = "application/vnd.cncf.model.weight.v1.raw";
inline constexpr const char* kModelPackWeightConfigRaw = "application/vnd.cncf.model.weight.config.v1.raw";
inline constexpr const char* kModelPackDatasetRaw = "application/vnd.cncf.model.dataset.v1.raw";
inline constexpr const char* kPtbundleManifestMediaType = "application/vnd.ptbundle.manifest.v1+json";
inline constexpr const char* kOciImageManifestMediaType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kModelPackFilepath = "org.cncf.model.filepath";
inline constexpr const char* kPtbundlePartAnnotation = "org.ptbundle.part";
inline constexpr const char* kPtbundleFormatAnnotation = "org.ptbundle.format-version";
inline constexpr const char* kPtbundlePartsAnnotation = "org.ptbundle.parts";
inline constexpr const char* kPtbundleTargetsAnnotation = "org.ptbundle.gpu-targets";

// Bounds on what a registry sends: a manifest of a bundle lists a few files;
// 4 MiB holds some 20,000 layers, and more than kMaxArtifactLayers is refused.
inline constexpr uint64_t kMaxRegistryManifestBytes = 4 << 20;
inline constexpr size_t kMaxArtifactLayers = 4096;

struct ArtifactLayer {
  std::string path;  // org.cncf.model.filepath
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
  std::optional<std::string> part;  // org.ptbundle.part
};

struct ArtifactManifest {
  std::string artifact_type;  // empty when absent
  std::string config_media_type;
  std::string config_digest;
  uint64_t config_size = 0;
  std::vector<ArtifactLayer> layers;
  std::map<std::string, std::string> annotations;
};

// The media type of a bundle file at `path` (bundle.json, a *.sig, a part file).
std::string bundle_file_media_type(const std::string& path);

// The config blob's JSON for `manifest` with `layers` (their digests are its diffIds).
std::string modelpack_config(const Manifest& manifest, const std::vector<ArtifactLayer>& layers, const std::string& name);
// The manifest's JSON, its config described by `config` (the config blob's text).
std::string modelpack_manifest(const Manifest& manifest, const std::string& config, const std::vector<ArtifactLayer>& layers);

// A registry's manifest read and checked for form: an OCI image manifest
// (schemaVersion 2), at most kMaxArtifactLayers layers, each with a sha256
// digest, a size, a media type and a filepath annotation that is a plain
// relative path (no "..", ".", empty or absolute component, no backslash,
// no control character), no two layers with one path. Whether it is a
// bundle is the puller's question. `where` prefixes errors.
Result<ArtifactManifest> parse_artifact_manifest(std::string_view body, const std::string& where);

}  // namespace ptb
