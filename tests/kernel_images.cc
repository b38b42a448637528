#include "kernel_images.h"

#include <algorithm>

#include "ptbundle/formats/pt2.h"

namespace ptb::test {

std::vector<uint8_t> read_pt2_entry(const fs::path& package, const std::string& suffix) {
  auto pt2 = Pt2Package::open(package.string());
  REQUIRE_MESSAGE(pt2.ok(), (pt2.ok() ? "" : pt2.error().message));
  std::vector<std::string> names;
  for (const Pt2Entry& entry : pt2->entries())
    if (entry.name.size() >= suffix.size() && entry.name.ends_with(suffix)) names.push_back(entry.name);
  REQUIRE_MESSAGE(names.size() == 1, package << " has " << names.size() << " entries ending in " << suffix);
  auto bytes = pt2->read_entry(names[0], 64ull << 20);
  REQUIRE_MESSAGE(bytes.ok(), (bytes.ok() ? "" : bytes.error().message));
  return std::move(*bytes);
}

std::vector<KernelImage> scan_ok(const std::vector<uint8_t>& bytes, const std::string& name) {
  auto images = scan_kernels(Bytes(bytes.data(), bytes.size()), name);
  REQUIRE_MESSAGE(images.ok(), (images.ok() ? "" : images.error().message));
  return std::move(*images);
}

std::vector<KernelImage> scan_file_ok(const fs::path& path) { return scan_ok(read_bytes(path), path.filename().string()); }

std::vector<std::string> target_list(const std::vector<KernelImage>& images) {
  std::vector<std::string> list;
  for (const KernelImage& image : images) list.push_back(image.target() + " " + kernel_kind_name(image.kind));
  std::sort(list.begin(), list.end());
  return list;
}

}  // namespace ptb::test
