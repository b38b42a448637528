// libFuzzer target: merge's pair journal (.m.pte.ptbundle-pair), the file
// that lets the next merge rename a program over m.pte. The input is the
// journal's text; the folder holds m.pte, m.ptd, a finished temporary
// .m.pte.AbC123.tmp, a user's .notes.tmp, a symlink .m.pte.LiNk00.tmp to a
// file outside, and that file. Then interrupted_pair (what verify reads) and
// finish_interrupted_pair (what merge does first). It must not crash or hang;
// m.pte may only be replaced by .m.pte.AbC123.tmp; m.ptd, the user's file,
// the link's target and the file outside are never touched.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz_input.h"
#include "merge/merge_pair.h"

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path root = ptb::test::scratch_root("pair");
  const fs::path folder = root / "out";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(folder);
  ptb::test::write_file(root / "outside.pte", "outside");
  ptb::test::write_file(folder / "m.pte", "old program");
  ptb::test::write_file(folder / "m.ptd", "new data");
  ptb::test::write_file(folder / ".m.pte.AbC123.tmp", "new program");
  ptb::test::write_file(folder / ".notes.tmp", "a user's file");
  fs::create_symlink(root / "outside.pte", folder / ".m.pte.LiNk00.tmp", ec);
  const std::string program = (folder / "m.pte").string();
  ptb::test::write_file(ptb::detail::pair_journal_path(program), std::string(reinterpret_cast<const char*>(data), size));

  (void)ptb::detail::interrupted_pair(program);
  (void)ptb::detail::finish_interrupted_pair(program);

  const std::string now = read(folder / "m.pte");
  if (now != "old program" && now != "new program") std::abort();
  if (now == "new program" && fs::exists(folder / ".m.pte.AbC123.tmp")) std::abort();
  if (read(folder / "m.ptd") != "new data") std::abort();
  if (read(folder / ".notes.tmp") != "a user's file") std::abort();
  if (read(root / "outside.pte") != "outside") std::abort();
  if (!fs::is_symlink(folder / ".m.pte.LiNk00.tmp")) std::abort();  // never renamed over the program
  return 0;
}
