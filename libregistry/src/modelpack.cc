#include "ptbundle/registry/modelpack.h"

#include <set>

#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"
#include "ptbundle/registry/reference.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

std::vector<std::string> gpu_targets(const Manifest& manifest) {
  std::set<std::string> targets;
  for (const auto& part : manifest.parts) {
    if (part.cuda)
      for (const auto& t : part.cuda->kernel_targets) targets.insert(t.target);
    for (const auto& file : part.files)
      if (file.target) targets.insert(*file.target);
  }
  return {targets.begin(), targets.end()};
}

std::string part_description(const ManifestPart& part) {
  std::set<std::string> targets;
  if (part.cuda)
    for (const auto& t : part.cuda->kernel_targets) targets.insert(t.target);
  for (const auto& file : part.files)
    if (file.target) targets.insert(*file.target);
  std::vector<std::string> list(targets.begin(), targets.end());
  return part.name + (list.empty() ? std::string(" (no GPU code)") : " (" + join(list, ", ") + ")");
}

bool plain_relative_path(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string_view name = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (name.empty() || name == "." || name == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

Result<std::string> string_member(const Json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || !object[key].is_string())
    return invalid(where + ": " + key + ": missing or not a string");
  return object[key].get<std::string>();
}

Result<uint64_t> size_member(const Json& object, const std::string& where) {
  if (!object.contains("size") || !object["size"].is_number_unsigned())
    return invalid(where + ": size: missing or not a non-negative integer");
  const uint64_t size = object["size"].get<uint64_t>();
  if (size > (1ull << 50)) return invalid(where + ": size " + std::to_string(size) + " is larger than 1 PiB");
  return size;
}

}  // namespace

std::string bundle_file_media_type(const std::string& path) {
  if (path == kManifestFileName) return kPtbundleManifestMediaType;
  if (path.ends_with(".sig")) return kSigstoreBundleMediaType;
  if (path.starts_with(std::string(kTestcaseFolder) + "/")) return kModelPackDatasetRaw;
  return kModelPackWeightRaw;
}

std::string modelpack_config(const Manifest& manifest, const std::vector<ArtifactLayer>& layers, const std::string& name) {
  Json config = Json::object();
  Json descriptor = Json::object();
  if (!manifest.created.empty()) descriptor["createdAt"] = manifest.created;
  descriptor["name"] = name;
  descriptor["vendor"] = "ptbundle";
  std::vector<std::string> parts;
  for (const auto& part : manifest.parts) parts.push_back(part_description(part));
  descriptor["description"] = "ptbundle bundle, format " + std::to_string(manifest.format_version) +
                              "; parts: " + join(parts, ", ");
  config["descriptor"] = descriptor;
  Json diff_ids = Json::array();
  for (const auto& layer : layers) diff_ids.push_back(layer.digest);
  config["modelfs"] = Json{{"type", "layers"}, {"diffIds", diff_ids}};
  config["config"] = Json{{"format", "executorch"}};
  return config.dump();
}

std::string modelpack_manifest(const Manifest& manifest, const std::string& config, const std::vector<ArtifactLayer>& layers) {
  Json out = Json::object();
  out["schemaVersion"] = 2;
  out["mediaType"] = kOciImageManifestMediaType;
  out["artifactType"] = kModelPackArtifactType;
  out["config"] = Json{{"mediaType", kModelPackConfigMediaType},
                       {"digest", "sha256:" + to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(config.data()), config.size())))},
                       {"size", config.size()}};
  Json list = Json::array();
  for (const auto& layer : layers) {
    Json annotations = Json::object();
    annotations[kModelPackFilepath] = layer.path;
    if (layer.part) annotations[kPtbundlePartAnnotation] = *layer.part;
    list.push_back(Json{{"mediaType", layer.media_type}, {"digest", layer.digest}, {"size", layer.size}, {"annotations", annotations}});
  }
  out["layers"] = list;
  std::vector<std::string> parts;
  for (const auto& part : manifest.parts) parts.push_back(part.name);
  Json annotations = Json::object();
  if (!manifest.created.empty()) annotations["org.opencontainers.image.created"] = manifest.created;
  annotations[kPtbundleFormatAnnotation] = std::to_string(manifest.format_version);
  annotations[kPtbundlePartsAnnotation] = join(parts, ",");
  annotations[kPtbundleTargetsAnnotation] = join(gpu_targets(manifest), ",");
  out["annotations"] = annotations;
  return out.dump();
}

Result<ArtifactManifest> parse_artifact_manifest(std::string_view body, const std::string& where) {
  if (body.size() > kMaxRegistryManifestBytes)
    return invalid(where + ": " + std::to_string(body.size()) + " bytes; expected a manifest of at most 4 MiB");
  PTB_TRY(auto json, parse_json_bounded(body, where, "an OCI image manifest", 16));
  if (!json.is_object()) return invalid(where + ": expected a JSON object (an OCI image manifest)");
  if (!json.contains("schemaVersion") || json["schemaVersion"] != 2)
    return invalid(where + ": schemaVersion: expected 2 (an OCI image manifest)");
  if (json.contains("mediaType")) {
    PTB_TRY(std::string type, string_member(json, "mediaType", where));
    if (type != kOciImageManifestMediaType)
      return invalid(where + ": mediaType " + in_quotes(type) + "; expected " + kOciImageManifestMediaType +
                     (type.find("index") != std::string::npos ? " (an index of several manifests is not a bundle)" : ""));
  }
  ArtifactManifest out;
  if (json.contains("artifactType")) {
    PTB_TRY(out.artifact_type, string_member(json, "artifactType", where));
  }
  if (!json.contains("config") || !json["config"].is_object()) return invalid(where + ": config: missing or not an object");
  const Json& config = json["config"];
  PTB_TRY(out.config_media_type, string_member(config, "mediaType", where + ": config"));
  PTB_TRY(out.config_digest, string_member(config, "digest", where + ": config"));
  PTB_TRY(out.config_size, size_member(config, where + ": config"));
  if (!json.contains("layers") || !json["layers"].is_array()) return invalid(where + ": layers: missing or not an array");
  const Json& layers = json["layers"];
  if (layers.size() > kMaxArtifactLayers)
    return invalid(where + ": " + std::to_string(layers.size()) + " layers; expected at most " +
                   std::to_string(kMaxArtifactLayers) + " (a bundle's files)");
  std::set<std::string> paths;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string at = where + ": layers[" + std::to_string(i) + "]";
    const Json& layer = layers[i];
    if (!layer.is_object()) return invalid(at + ": expected an object");
    ArtifactLayer l;
    PTB_TRY(l.media_type, string_member(layer, "mediaType", at));
    PTB_TRY(l.digest, string_member(layer, "digest", at));
    if (!is_sha256_digest(l.digest))
      return invalid(at + ": digest " + in_quotes(l.digest) + "; expected sha256: and 64 lowercase hex digits");
    PTB_TRY(l.size, size_member(layer, at));
    if (!layer.contains("annotations") || !layer["annotations"].is_object() ||
        !layer["annotations"].contains(kModelPackFilepath) || !layer["annotations"][kModelPackFilepath].is_string())
      return invalid(at + ": no " + kModelPackFilepath + " annotation; expected each layer to name its file");
    l.path = layer["annotations"][kModelPackFilepath].get<std::string>();
    if (!plain_relative_path(l.path))
      return invalid(at + ": " + kModelPackFilepath + " " + in_quotes(l.path) +
                     " leads out of the bundle folder or is no plain path; expected a relative path without '..', "
                     "'.', empty components or backslashes");
    if (layer["annotations"].contains(kPtbundlePartAnnotation) && layer["annotations"][kPtbundlePartAnnotation].is_string())
      l.part = layer["annotations"][kPtbundlePartAnnotation].get<std::string>();
    if (!paths.insert(l.path).second) return invalid(at + ": a second layer for " + in_quotes(l.path));
    out.layers.push_back(std::move(l));
  }
  if (json.contains("annotations") && json["annotations"].is_object()) {
    for (const auto& [key, value] : json["annotations"].items())
      if (value.is_string() && out.annotations.size() < 256) out.annotations[key] = value.get<std::string>();
  }
  return out;
}

}  // namespace ptb
