// The checks export, verify and run share on an AOTInductor model (see
// check_cuda_package_model in pt2.h): one function, so that verify never
// calls a package good that export refuses.
#include <charconv>
#include <map>

#include "ptbundle/base/text.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/formats/pt2.h"

namespace ptb {
namespace {

// A wrapper source is text of a few hundred kilobytes; a limit keeps a
// crafted entry from costing more.
constexpr uint64_t kMaxWrapperSourceBytes = 64ull << 20;
// Libraries with kernels embedded reach hundreds of megabytes; weights blobs
// many gigabytes. Streaming costs no memory, only time.
constexpr uint64_t kMaxEntryBytes = 1ull << 40;

// "constants_info_[<i>].<field> = <value>;" lines, as AOTInductor's
// generated wrapper writes them.
struct ConstantFacts {
  uint64_t data_size = 0;
  bool folded = false;
};

std::map<uint64_t, ConstantFacts> read_constants(std::string_view text) {
  std::map<uint64_t, ConstantFacts> constants;
  constexpr std::string_view kPrefix = "constants_info_[";
  for (size_t at = text.find(kPrefix); at != std::string_view::npos; at = text.find(kPrefix, at + 1)) {
    std::string_view rest = text.substr(at + kPrefix.size());
    uint64_t index = 0;
    auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    if (error != std::errc() || end == rest.data() + rest.size() || *end != ']') continue;
    rest = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
    size_t line_end = rest.find('\n');
    std::string_view line = rest.substr(0, line_end);
    if (line.starts_with(".data_size = ")) {
      std::string_view number = line.substr(13);
      uint64_t size = 0;
      auto parsed = std::from_chars(number.data(), number.data() + number.size(), size);
      if (parsed.ec == std::errc()) constants[index].data_size = size;
    } else if (line.starts_with(".from_folded = true")) {
      constants[index].folded = true;
    }
  }
  return constants;
}

}  // namespace

Result<std::optional<uint64_t>> pt2_needed_weights_bytes(const Pt2Package& package, const Pt2Model& model) {
  std::optional<std::string> source;
  for (const auto& name : model.cpp_sources) {
    if (name.ends_with(".wrapper.cpp")) source = name;
  }
  if (!source) return std::optional<uint64_t>();
  PTB_TRY(auto bytes, package.read_entry(*source, kMaxWrapperSourceBytes));
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto constants = read_constants(text);
  if (constants.empty()) {
    // A program without weights has no constants_info_ lines at all; the
    // constant count its constructor declares tells it apart from a source
    // this reader does not understand.
    auto counts = pt2_wrapper_counts(text);
    return counts && counts->constants == 0 ? std::optional<uint64_t>(0) : std::optional<uint64_t>();
  }
  uint64_t total = 0;
  for (const auto& [index, facts] : constants) {
    if (facts.folded) continue;
    if (facts.data_size > kMaxEntryBytes - total) return invalid(package.path() + ": entry '" + *source + "': constant sizes add up past 1 TiB");
    total += facts.data_size;
  }
  return std::optional<uint64_t>(total);
}

Status check_cuda_package_model(const Pt2Package& package, const Pt2Model& model, bool read_through) {
  if (const auto* device = model.metadata_value("AOTI_DEVICE_KEY"); device && *device != "cuda")
    return invalid(package.path() + ": compiled for device \"" + clipped(*device) + "\" (AOTI_DEVICE_KEY); expected \"cuda\"");
  if (model.wrapper_library.empty())
    return invalid(package.path() + ": model '" + clipped(model.name) + "' has no *.wrapper.so; expected the compiled library");
  // Kernel files (embed_kernel_binary=False) become files a runner creates
  // under these names: each must be a plain file name beside the library.
  for (const std::string& entry : model.kernel_binaries) {
    PTB_CHECK(check_kernel_file_name(std::string_view(entry).substr(model.directory.size()),
                                     package.path() + ": entry " + in_quotes(entry)));
  }
  auto read_kernels = [&]() -> Status {
    if (!read_through) return {};
    PTB_CHECK(package.sha256_entry(model.wrapper_library, kMaxEntryBytes));
    for (const std::string& entry : model.kernel_binaries) PTB_CHECK(package.sha256_entry(entry, kMaxEntryBytes));
    return {};
  };

  // No blob: the weights are compiled into the library
  // (package_constants_in_so=True, PyTorch's default), which copies them to
  // the GPU itself when its container is created; or the program has none.
  if (!model.weights_blob) return read_kernels();
  const Pt2Entry* blob = package.find_entry(*model.weights_blob);
  if (!blob) return invalid(package.path() + ": entry '" + clipped(*model.weights_blob) + "' is listed but missing");
  PTB_TRY(std::optional<uint64_t> needed, pt2_needed_weights_bytes(package, model));
  if (blob->size == 0 && (!needed || *needed > 0))
    return invalid(package.path() + ": entry '" + clipped(*model.weights_blob) + "' is empty" +
                   (needed ? "; the model's wrapper source declares constants of " + std::to_string(*needed) + " bytes"
                           : "; the model's wrapper source declares no constant count this reader understands") +
                   "; expected the model's weights blob (a program without weights declares 0 constants); "
                   "compile the model again");
  if (needed && blob->size < *needed) {
    return invalid(package.path() + ": entry '" + clipped(*model.weights_blob) + "' holds " + std::to_string(blob->size) +
                   " bytes; the model's wrapper source declares constants of " + std::to_string(*needed) +
                   " bytes; the blob is truncated; compile the model again");
  }
  PTB_CHECK(read_kernels());
  // Read through: the sizes and CRC-32s of what export copies and run loads.
  if (read_through) PTB_CHECK(package.sha256_entry(*model.weights_blob, kMaxEntryBytes));
  return {};
}

}  // namespace ptb
