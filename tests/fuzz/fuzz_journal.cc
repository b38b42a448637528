// libFuzzer target: the journal (.ptbundle.pending) of a bundle folder, the
// one file of a bundle that says which other files may be removed. The input
// is the journal's text; the folder holds a one-part bundle.json (part enc,
// files enc.pte and enc.ptd), enc@1.pte, a planted evil.pte, testcases/enc.ptd,
// a symlink to a file outside, and that file. Then
// find_leftovers (what verify reads) and a writer's begin (which removes what
// the journal names). It must not crash or hang; only enc@1.pte may be
// excused as a leftover; nothing outside the folder, nor bundle.json, nor a
// listed file, nor anything but a .pte/.ptd, is ever removed.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_input.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/transaction.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path root = ptb::test::scratch_root("journal");
  const fs::path bundle = root / "bundle";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(bundle / "testcases");
  ptb::test::write_file(root / "outside.pte", "outside");
  ptb::test::write_file(bundle / "enc.pte", "program");
  ptb::test::write_file(bundle / "enc.ptd", "data");
  ptb::test::write_file(bundle / "enc@1.pte", "new program");
  ptb::test::write_file(bundle / "evil.pte", "planted");
  ptb::test::write_file(bundle / "notes.txt", "a user's file");
  ptb::test::write_file(bundle / "testcases" / "enc.ptd", "testcase");
  fs::create_symlink(root / "outside.pte", bundle / "link.pte", ec);
  ptb::Manifest manifest;
  manifest.ptbundle_version = "fuzz";
  manifest.created = "2026-01-01T00:00:00Z";
  ptb::ManifestPart part;
  part.name = "enc";
  part.source.kind = "executorch";
  part.files.push_back({ptb::FileRole::Program, "enc.pte", 7, std::string(64, '0'), std::nullopt});
  part.files.push_back({ptb::FileRole::Data, "enc.ptd", 4, std::string(64, '0'), std::nullopt});
  manifest.parts.push_back(part);
  ptb::test::write_file(bundle / ptb::kJournalFileName, std::string(reinterpret_cast<const char*>(data), size));

  auto dir = ptb::BundleDir::open(bundle.string());
  if (!dir.ok()) std::abort();
  ptb::BundleLeftovers left = ptb::find_leftovers(*dir, &manifest);
  for (const auto& path : left.pending)
    if (path != "enc@1.pte") std::abort();  // only another generation of a listed part's file is excused

  // A writer, holding the lock, removes what the journal names.
  if (!ptb::write_manifest(bundle.string(), manifest).ok()) std::abort();
  { auto t = ptb::BundleTransaction::begin(bundle.string(), false, std::chrono::seconds(1)); }
  for (const char* kept : {"bundle.json", "enc.pte", "enc.ptd", "notes.txt", "testcases"})
    if (!fs::exists(bundle / kept)) std::abort();
  if (!fs::exists(root / "outside.pte")) std::abort();  // a symlink named is removed, never followed
  return 0;
}
