// A program, data file or bundled program rewritten in place while it is
// read: a mapping shows another process's writes, so a FlatBuffer verified in
// the mapping and read from it again could be followed through offsets
// nobody verified.
// Readers verify and read a private copy of the flatbuffer; these tests
// rewrite the file's flatbuffer in place, over and over, while verify's
// checks and the readers run, and require that nothing crashes.
//
// A few thousand reads in CI; scripts/race-loops sets PTB_RACE_ROUNDS and
// runs 10,000 rounds of verify for each file.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/integrity/integrity.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

int rounds(int ci_rounds) {
  const char* text = std::getenv("PTB_RACE_ROUNDS");
  return text && std::atoi(text) > 0 ? std::atoi(text) : ci_rounds;
}

// Writes `a` and `b` over [0, a.size()) of `path` in turn, in place (same
// inode, no truncation), until `stop`.
void rewrite_until(const fs::path& path, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                   const std::atomic<bool>& stop) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  for (bool first = true; !stop.load(); first = !first) {
    const std::vector<uint8_t>& bytes = first ? a : b;
    if (::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) break;
  }
  ::close(fd);
}

// `read` runs `count` times in a child process while this one rewrites the
// first `region` bytes of `path` between their own value and 0x7f filler
// (offsets that lead far outside the file). Returns how the child ended:
// 0 when every read finished, 128 + signal when one crashed.
template <class Read>
int reads_while_rewritten(const fs::path& path, uint64_t from, uint64_t region, int count, Read read) {
  std::vector<uint8_t> good = ptb::test::read_bytes(path);
  REQUIRE(region <= good.size());
  good.resize(region);
  std::vector<uint8_t> hostile = good;
  for (uint64_t i = from; i < region; ++i) hostile[i] = 0x7f;
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (int i = 0; i < count; ++i) read();
    ::_exit(0);
  }
  std::atomic<bool> stop{false};
  std::thread writer([&] { rewrite_until(path, good, hostile, stop); });
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop.store(true);
  writer.join();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("rewritten in place: verify of a .pte whose flatbuffer is rewritten while it reads never crashes") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path pte = dir / "model.pte";
  fs::copy_file(fixture("cuda/sm80/model.pte"), pte);
  fs::permissions(pte, fs::perms::owner_write, fs::perm_options::add);
  auto opened = PteFile::open(pte.string());
  REQUIRE(opened.ok());
  const uint64_t flatbuffer = opened->flatbuffer_size();
  const std::string argument = pte.string() + "," + fixture("cuda/sm80/aoti_cuda_blob.ptd").string();
  // From byte 40: the root offset, identifier and extended header stay, so
  // that most opens get as far as the flatbuffer's verification.
  const int ended = reads_while_rewritten(pte, 40, flatbuffer, rounds(2000), [&] {
    CheckList checks;
    (void)check_integrity(argument, checks);
  });
  CHECK(ended == 0);
}

TEST_CASE("rewritten in place: a .ptd whose flatbuffer is rewritten while it opens never crashes the reader") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path ptd = dir / "data.ptd";
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), ptd);
  fs::permissions(ptd, fs::perms::owner_write, fs::perm_options::add);
  auto opened = PtdFile::open(ptd.string());
  REQUIRE(opened.ok());
  const uint64_t end = opened->header().flatbuffer_offset + opened->header().flatbuffer_size;
  // The header (48 bytes) stays: the flatbuffer behind it changes.
  const int ended = reads_while_rewritten(ptd, opened->header().flatbuffer_offset + 8, end, rounds(2000), [&] {
    auto again = PtdFile::open(ptd.string());
    if (again.ok()) {
      for (const PtdEntry& entry : again->entries()) (void)again->bytes(entry).size();
    }
  });
  CHECK(ended == 0);
}

TEST_CASE("rewritten in place: verify of a .bpte whose flatbuffer is rewritten while it reads never crashes") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bpte = dir / "bundled.bpte";
  fs::copy_file(fixture("executorch/bundled_program.bpte"), bpte);
  fs::permissions(bpte, fs::perms::owner_write, fs::perm_options::add);
  // The whole file is the BundledProgram's flatbuffer; its root offset and
  // identifier (8 bytes) stay.
  const int ended = reads_while_rewritten(bpte, 8, fs::file_size(bpte), rounds(2000), [&] {
    CheckList checks;
    (void)check_integrity(bpte.string(), checks);
  });
  CHECK(ended == 0);
}
