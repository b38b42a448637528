#include <fcntl.h>
#include <unistd.h>

#include "ptbundle/base/file.h"
#include "ptbundle/base/sha256.h"
#include "support.h"

using namespace ptb;
using ptb::test::TempDir;

TEST_CASE("MappedFile: slices are bounds-checked with the file name in the error") {
  TempDir dir;
  auto path = (dir / "data.bin").string();
  REQUIRE(write_file_atomically(path, std::string("0123456789")).ok());
  auto file = MappedFile::open(path);
  REQUIRE(file.ok());
  CHECK(file->size() == 10);
  auto inside = file->slice(2, 3, "segment 0");
  REQUIRE(inside.ok());
  CHECK(std::string(inside->begin(), inside->end()) == "234");
  auto past = file->slice(8, 3, "segment 1");
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message.find("data.bin: segment 1 at offset 8 with size 3") != std::string::npos);
  auto overflow = file->slice(~0ull - 1, 4, "segment 2");
  CHECK_FALSE(overflow.ok());
}

TEST_CASE("MappedFile: a missing file is an I/O error naming it") {
  auto file = MappedFile::open("/nonexistent/ptbundle/x.pte");
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().kind == ErrorKind::Io);
  CHECK(file.error().message.find("/nonexistent/ptbundle/x.pte") != std::string::npos);
}

TEST_CASE("AtomicOutput: nothing is left behind without commit") {
  TempDir dir;
  auto target = (dir / "out.ptd").string();
  {
    auto out = AtomicOutput::create(target);
    REQUIRE(out.ok());
    REQUIRE(out->write_zeros(100).ok());
  }
  CHECK(std::filesystem::is_empty(dir.path()));
  auto out = AtomicOutput::create(target);
  REQUIRE(out.ok());
  REQUIRE(out->write(Bytes(reinterpret_cast<const uint8_t*>("abc"), 3)).ok());
  REQUIRE(out->commit().ok());
  CHECK(ptb::test::read_text(target) == "abc");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);
}

TEST_CASE("AtomicOutput: copy_from copies a range of another file") {
  TempDir dir;
  auto source_path = (dir / "src").string();
  REQUIRE(write_file_atomically(source_path, std::string("hello, world")).ok());
  auto source = MappedFile::open(source_path);
  REQUIRE(source.ok());
  auto out = AtomicOutput::create((dir / "dst").string());
  REQUIRE(out.ok());
  REQUIRE(out->copy_from(*source, 7, 5).ok());
  CHECK(out->position() == 5);
  REQUIRE(out->commit().ok());
  CHECK(ptb::test::read_text(dir / "dst") == "world");
}

TEST_CASE("sha256 matches a known digest") {
  std::string abc = "abc";
  auto digest = sha256(Bytes(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()));
  CHECK(to_hex(digest) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("AtomicOutput: a guarded file is held after finish, and any open for writing shows") {
  TempDir dir;
  auto target = (dir / "layer.bin").string();
  auto out = AtomicOutput::create(target);
  REQUIRE(out.ok());
  if (!out->guard_writes()) {
    // No leases on this file system: nothing is held, and callers hash.
    REQUIRE(out->write_zeros(10).ok());
    auto held = out->finish();
    REQUIRE(held.ok());
    CHECK(*held == nullptr);
    return;
  }
  REQUIRE(out->write(Bytes(reinterpret_cast<const uint8_t*>("0123456789"), 10)).ok());
  auto held = out->finish();
  REQUIRE(held.ok());
  REQUIRE(*held != nullptr);
  CHECK((*held)->unchanged());
  REQUIRE(out->commit().ok());
  int reader = ::open(target.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(reader >= 0);
  CHECK((*held)->is(reader));  // renamed into place, still the file written
  CHECK((*held)->unchanged());  // a reader changes nothing
  // A writer cannot open it while it is held (its open waits, or with
  // O_NONBLOCK fails), and the attempt voids the proof.
  int writer = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(writer < 0);
  if (writer >= 0) ::close(writer);
  CHECK_FALSE((*held)->unchanged());
  ::close(reader);
}

TEST_CASE("AtomicOutput: a guarded file another process opened while it was written is not held") {
  TempDir dir;
  auto target = (dir / "layer.bin").string();
  auto out = AtomicOutput::create(target);
  REQUIRE(out.ok());
  if (!out->guard_writes()) return;  // no leases here: the first case covers it
  REQUIRE(out->write_zeros(10).ok());
  // Another open of the temporary file (this one for reading: any open
  // counts) while it is written, then a write through it after.
  int other = ::open(out->temp_path().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  CHECK(other < 0);  // the lease holds it off, but the attempt is seen
  if (other >= 0) ::close(other);
  REQUIRE(out->write_zeros(10).ok());
  auto held = out->finish();
  REQUIRE(held.ok());
  CHECK(*held == nullptr);
  CHECK(out->commit().ok());
}
