// The inspect object of an AOTInductor package (.pt2): entries, and per model
// its library, weights blob, kernel files and AOTI metadata.
#include <cstring>

#include "inspect/inspect_internal.h"
#include "ptbundle/formats/pt2.h"

namespace ptb::detail {
namespace {

// Libraries with weights linked in reach gigabytes; beyond this, inspect
// reports the entry but neither hashes nor scans it.
constexpr uint64_t kMaxEntryRead = uint64_t{4} << 30;

// {"name", "size"} plus, when asked and affordable, "sha256" and "kernels".
Result<InspectJson> entry_json(const Pt2Package& package, const std::string& name, bool scan,
                               const InspectOptions& options) {
  const Pt2Entry* entry = package.find_entry(name);
  InspectJson out;
  out["name"] = name;
  out["size"] = entry ? entry->size : 0;
  if (!entry || (!options.sha256 && !scan)) return out;
  if (entry->size > kMaxEntryRead) {
    out["skipped"] = "larger than 4 GiB: not hashed or scanned";
    return out;
  }
  // Streamed: memory stays flat whatever the entry inflates to.
  if (options.sha256) {
    PTB_TRY(out["sha256"], package.sha256_entry(name, entry->size));
  }
  if (scan) {
    // The scanner needs random access: the entry is inflated into an unnamed
    // temporary file and mapped, never held in anonymous memory; a library
    // only when it starts as an ELF file, so a bomb of zeros costs no disk.
    PTB_TRY(auto prefix, package.read_entry_prefix(name, 4));
    const bool library = name.ends_with(".so");
    if (library && (prefix.size() < 4 || std::memcmp(prefix.data(), "\x7f" "ELF", 4) != 0)) {
      add_kernels(out, Bytes(prefix.data(), prefix.size()), package.path() + ": " + name);
    } else {
      PTB_TRY(MappedFile inflated, package.extract_entry_mapped(name, entry->size));
      add_kernels(out, inflated.bytes(), package.path() + ": " + name);
    }
  }
  return out;
}

Result<InspectJson> model_json(const Pt2Package& package, const Pt2Model& model, const InspectOptions& options) {
  InspectJson out;
  out["name"] = model.name;
  out["directory"] = model.directory;
  PTB_TRY(out["wrapper_library"], entry_json(package, model.wrapper_library, true, options));
  if (model.weights_blob) {
    PTB_TRY(out["weights_blob"], entry_json(package, *model.weights_blob, false, options));
  } else {
    out["weights_blob"] = nullptr;
  }
  out["weights_in_library"] = model.weights_in_library();
  out["kernel_files"] = InspectJson::array();
  for (const auto& name : model.kernel_binaries) {
    PTB_TRY(auto kernel, entry_json(package, name, true, options));
    out["kernel_files"].push_back(std::move(kernel));
  }
  out["metadata"] = InspectJson::object();
  for (const auto& [key, value] : model.metadata) out["metadata"][key] = value;
  const std::string* capability = model.metadata_value("AOTI_COMPUTE_CAPABILITY");
  out["compute_capability"] = capability ? InspectJson(*capability) : InspectJson(nullptr);
  const std::string* device = model.metadata_value("AOTI_DEVICE_KEY");
  out["device"] = device ? InspectJson(*device) : InspectJson(nullptr);
  return out;
}

}  // namespace

Result<InspectJson> inspect_package(const std::string& path, const InspectOptions& options) {
  PTB_TRY(auto package, Pt2Package::open(path));
  InspectJson out;
  out["root"] = package.root();
  out["archive_format"] = package.archive_format();
  out["archive_version"] = package.archive_version();
  out["entries"] = InspectJson::array();
  for (const auto& entry : package.entries()) {
    out["entries"].push_back({{"name", entry.name},
                              {"size", entry.size},
                              {"compressed_size", entry.compressed_size},
                              {"compression_method", entry.compression_method}});
  }
  out["models"] = InspectJson::array();
  for (const auto& model : package.models()) {
    PTB_TRY(auto m, model_json(package, model, options));
    out["models"].push_back(std::move(m));
  }
  out["external_weight_entries"] = package.external_weight_entries();
  return out;
}

}  // namespace ptb::detail
