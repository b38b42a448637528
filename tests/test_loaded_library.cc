// The runner opens each part's library from bytes (runner/loaded_library.h),
// and the loader knows a library by its file's device and inode: where the
// file system gives a removed file's inode to the next file, dlopen would
// return the library still loaded from the removed file. Two system
// libraries stand in for two parts' libraries: the first stays loaded while
// the second is opened again and again. Some file systems give three
// `mktemp -d` folders in a row, each with one file then removed, the same
// inode every time; ext4 usually gives fresh ones, so there this test passes
// without the guard too.
#include <doctest/doctest.h>

#include <filesystem>

#include "runner/loaded_library.h"
#include "gpu_support.h"

using ptb::detail::LoadedLibrary;
namespace fs = std::filesystem;

namespace {

std::string system_library(const char* name) {
  for (const char* folder : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"}) {
    const fs::path path = fs::path(folder) / name;
    if (fs::exists(path)) return ptb::test::read_text(path);
  }
  return {};
}

ptb::Bytes bytes(const std::string& text) { return {reinterpret_cast<const uint8_t*>(text.data()), text.size()}; }

}  // namespace

TEST_CASE("runner: a library opened from bytes is that library, though its file reuses a removed file's inode") {
  const std::string zlib = system_library("libz.so.1"), bzip2 = system_library("libbz2.so.1.0");
  if (zlib.empty() || bzip2.empty()) {
    ptb::test::skip("libz.so.1 or libbz2.so.1.0 not found in the system's library folders");
    return;
  }
  ptb::test::ScopedTmpdir tmp;
  auto first = LoadedLibrary::open(bytes(zlib), "zlib", "first.so", "first");
  REQUIRE_MESSAGE(first.ok(), first.error().message);
  REQUIRE(first->symbol("deflate") != nullptr);
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    auto second = LoadedLibrary::open(bytes(bzip2), "bzip2-" + std::to_string(i), "second.so", "second");
    REQUIRE_MESSAGE(second.ok(), second.error().message);
    CHECK(second->symbol("BZ2_bzCompress") != nullptr);
    CHECK(second->symbol("deflate") == nullptr);
  }
  CHECK_MESSAGE(tmp.empty(), tmp.listing());  // every copy written was removed
}
