#include "ptbundle/formats/kernel_files.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ptbundle/base/text.h"
#include "ptbundle/formats/pte.h"

namespace ptb {
namespace {

constexpr std::string_view kSuffixes[] = {".cubin", ".fatbin", ".ptx"};

bool path_char(unsigned char c) { return c >= 0x21 && c <= 0x7e; }

}  // namespace

std::string kernel_file_key(std::string_view library_key, std::string_view file_name) {
  return std::string(library_key) + "/" + std::string(file_name);
}

Result<std::vector<KernelFile>> kernel_files_of(const PteFile& pte, std::string_view library_key) {
  const std::string prefix = std::string(library_key) + "/";
  std::vector<KernelFile> files;
  for (const PteNamedData& entry : pte.named_data()) {
    if (!std::string_view(entry.key).starts_with(prefix)) continue;
    std::string name = entry.key.substr(prefix.size());
    PTB_CHECK(check_kernel_file_name(name, pte.name() + ": named data " + in_quotes(entry.key)));
    files.push_back({std::move(name), entry.key, &entry});
  }
  std::sort(files.begin(), files.end(), [](const KernelFile& a, const KernelFile& b) { return a.key < b.key; });
  return files;
}

std::vector<std::string> kernel_files_named_by(Bytes library) {
  std::set<std::string> names;
  const char* base = reinterpret_cast<const char*>(library.data());
  const size_t size = library.size();
  for (std::string_view suffix : kSuffixes) {
    // The suffix and the string's terminating NUL.
    const std::string needle = std::string(suffix) + '\0';
    size_t at = 0;
    while (at + needle.size() <= size) {
      const void* hit = memmem(base + at, size - at, needle.data(), needle.size());
      if (!hit) break;
      const size_t end = static_cast<size_t>(static_cast<const char*>(hit) - base) + suffix.size();
      at = end + 1;
      // Back to the string's start; a path has a '/' and only printable bytes.
      size_t start = end - suffix.size();
      while (start > 0 && path_char(static_cast<unsigned char>(base[start - 1])) && end - start < 4096) --start;
      std::string_view path(base + start, end - start);
      const size_t slash = path.rfind('/');
      if (slash == std::string_view::npos) continue;
      std::string_view name = path.substr(slash + 1);
      // A format string ("%s.cubin") or anything else that is no file name
      // is not what a compiled kernel's path looks like.
      if (check_kernel_file_name(name, "").ok()) names.emplace(name);
    }
  }
  return {names.begin(), names.end()};
}

Status check_kernel_files_present(Bytes library, const std::vector<std::string>& available, const std::string& context,
                                  const std::string& where) {
  std::vector<std::string> missing;
  for (const std::string& name : kernel_files_named_by(library)) {
    if (std::find(available.begin(), available.end(), name) == available.end()) missing.push_back(clipped(name));
  }
  if (missing.empty()) return {};
  const size_t count = missing.size();
  if (count > 5) missing.resize(5);
  return invalid(context + ": the library loads " + std::to_string(count) +
                 (count == 1 ? " kernel file (" : " kernel files (") + join(missing, ", ") +
                 (count > 5 ? ", ..." : "") + ") that " + where +
                 " does not hold; expected every kernel file it names beside it (AOTInductor's cubin_dir); compile "
                 "and package the model again");
}

}  // namespace ptb
