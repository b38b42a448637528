// The inspect model of an AOTInductor package (.pt2): entries, and per model
// its library, weights blob, kernel files and AOTI metadata.
#include <algorithm>
#include <cstring>

#include "inspect/inspect_internal.h"
#include "ptbundle/formats/pt2.h"

namespace ptb::detail {
namespace {

// Libraries with weights linked in reach gigabytes; beyond this, inspect
// reports the entry but neither hashes nor scans it.
constexpr uint64_t kMaxEntryRead = uint64_t{4} << 30;

// Its name and size plus, when asked and affordable, its digest and kernels.
Result<InspectPackageFile> package_file(const Pt2Package& package, const std::string& name, bool scan,
                                        const InspectOptions& options) {
  const Pt2Entry* entry = package.find_entry(name);
  InspectPackageFile out;
  out.name = name;
  out.size = entry ? entry->size : 0;
  if (!entry || (!options.sha256 && !scan)) return out;
  if (entry->size > kMaxEntryRead) {
    out.skipped = "larger than 4 GiB: not hashed or scanned";
    return out;
  }
  // Streamed: memory stays flat whatever the entry inflates to.
  if (options.sha256) {
    PTB_TRY(out.sha256, package.sha256_entry(name, entry->size));
  }
  if (scan) {
    // The scanner needs random access: the entry is inflated into an unnamed
    // temporary file and mapped, never held in anonymous memory; a library
    // only when it starts as an ELF file, so a bomb of zeros costs no disk.
    PTB_TRY(auto prefix, package.read_entry_prefix(name, 4));
    const bool library = name.ends_with(".so");
    if (library && (prefix.size() < 4 || std::memcmp(prefix.data(), "\x7f" "ELF", 4) != 0)) {
      out.kernels = inspect_kernels(Bytes(prefix.data(), prefix.size()), package.path() + ": " + name);
    } else {
      PTB_TRY(MappedFile inflated, package.extract_entry_mapped(name, entry->size));
      out.kernels = inspect_kernels(inflated.bytes(), package.path() + ": " + name);
    }
  }
  return out;
}

// Each key once, where it first appears, with the last value it is given.
InspectMetadata metadata_of(const Pt2Model& model) {
  InspectMetadata out;
  for (const auto& entry : model.metadata) {
    const auto& [key, value] = entry;
    // By the pair, not the binding: clang 14 cannot capture a structured binding.
    auto known = std::find_if(out.entries.begin(), out.entries.end(), [&](const auto& e) { return e.first == entry.first; });
    if (known != out.entries.end()) {
      known->second = value;
    } else {
      out.entries.emplace_back(key, value);
    }
  }
  return out;
}

std::optional<std::string> metadata_value(const Pt2Model& model, std::string_view key) {
  const std::string* value = model.metadata_value(key);
  return value ? std::optional<std::string>(*value) : std::nullopt;
}

Result<InspectPackageModel> model_of(const Pt2Package& package, const Pt2Model& model, const InspectOptions& options) {
  InspectPackageModel out;
  out.name = model.name;
  out.directory = model.directory;
  PTB_TRY(out.wrapper_library, package_file(package, model.wrapper_library, true, options));
  if (model.weights_blob) {
    PTB_TRY(out.weights_blob, package_file(package, *model.weights_blob, false, options));
  }
  for (const auto& name : model.kernel_binaries) {
    PTB_TRY(auto kernel, package_file(package, name, true, options));
    out.kernel_files.push_back(std::move(kernel));
  }
  out.metadata = metadata_of(model);
  out.compute_capability = metadata_value(model, "AOTI_COMPUTE_CAPABILITY");
  out.device = metadata_value(model, "AOTI_DEVICE_KEY");
  return out;
}

}  // namespace

Result<InspectPackage> inspect_package(const std::string& path, const InspectOptions& options) {
  PTB_TRY(auto package, Pt2Package::open(path));
  InspectPackage out;
  out.root = package.root();
  out.archive_format = package.archive_format();
  out.archive_version = package.archive_version();
  for (const auto& entry : package.entries()) {
    out.entries.push_back({entry.name, entry.size, entry.compressed_size, entry.compression_method});
  }
  for (const auto& model : package.models()) {
    PTB_TRY(auto m, model_of(package, model, options));
    out.models.push_back(std::move(m));
  }
  out.external_weight_entries = package.external_weight_entries();
  return out;
}

}  // namespace ptb::detail
