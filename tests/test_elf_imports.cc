// find_import_slots: where a library keeps the addresses of the functions it
// imports, checked against what readelf -r says of a real AOTInductor library.
#include <cstring>

#include "ptbundle/kernels/elf_imports.h"
#include "ptbundle/cuda/run_part.h"
#include "support.h"

using namespace ptb;

namespace {

std::vector<uint8_t> mlp_et_library() {
  auto part = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), RunPartOptions{});
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  return {part->library.begin(), part->library.end()};
}

void put_u64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) { std::memcpy(bytes.data() + at, &value, 8); }

uint64_t get_u64(const std::vector<uint8_t>& bytes, size_t at) {
  uint64_t value;
  std::memcpy(&value, bytes.data() + at, 8);
  return value;
}

}  // namespace

TEST_CASE("elf imports: the GOT slots of cudaMemcpy and cudaMalloc in AOTInductor's library") {
  PTB_REQUIRE_FIXTURES();
  const std::vector<uint8_t> library = mlp_et_library();
  const Bytes bytes(library.data(), library.size());
  // readelf -rW: 00000000001bd6a0 R_X86_64_JUMP_SLOT cudaMemcpy, 00000000001bd688 ... cudaMalloc;
  // both in .got.plt, after the GNU_RELRO range 0x1b3748 + 0x88b8.
  auto copy = find_import_slots(bytes, "cudaMemcpy", "mlp_et.so");
  REQUIRE_MESSAGE(copy.ok(), copy.error().message);
  REQUIRE(copy->size() == 1);
  CHECK((*copy)[0].vaddr == 0x1bd6a0);
  CHECK_FALSE((*copy)[0].read_only);
  auto malloc_slots = find_import_slots(bytes, "cudaMalloc", "mlp_et.so");
  REQUIRE(malloc_slots.ok());
  REQUIRE(malloc_slots->size() == 1);
  CHECK((*malloc_slots)[0].vaddr == 0x1bd688);
  // A prefix of an imported name is another name.
  auto prefix = find_import_slots(bytes, "cudaMemcp", "mlp_et.so");
  REQUIRE(prefix.ok());
  CHECK(prefix->empty());
  auto exported = find_import_slots(bytes, "AOTInductorModelContainerRun", "mlp_et.so");
  REQUIRE(exported.ok());
  CHECK(exported->empty());  // defined by the library, not imported through a slot
}

TEST_CASE("elf imports: damaged tables are errors naming the library and the entry") {
  PTB_REQUIRE_FIXTURES();
  std::vector<uint8_t> library = mlp_et_library();
  // Section 8 is .rela.plt (readelf -SW); its header starts at e_shoff + 8 * 64.
  const uint64_t section_headers = get_u64(library, 40);
  const size_t rela_plt = section_headers + 8 * 64;
  const uint64_t table = get_u64(library, rela_plt + 24);
  REQUIRE(table == 0x86b58);

  SUBCASE("a relocation naming a symbol past .dynsym") {
    // The first entry's r_info: symbol index in the high 32 bits, JUMP_SLOT below.
    put_u64(library, table + 8, (uint64_t{0xfffff} << 32) | 7);
    auto slots = find_import_slots(Bytes(library.data(), library.size()), "cudaMemcpy", "lib.so");
    REQUIRE_FALSE(slots.ok());
    CHECK(slots.error().message.find("lib.so: .rela.plt entry at 0x86b58 names symbol 1048575; .dynsym holds") == 0);
  }
  SUBCASE("a table whose size is not a whole number of entries") {
    put_u64(library, rela_plt + 32, 0x69a8 + 5);
    auto slots = find_import_slots(Bytes(library.data(), library.size()), "cudaMemcpy", "lib.so");
    REQUIRE_FALSE(slots.ok());
    CHECK(slots.error().message ==
          "lib.so: .rela.plt at 0x86b58 holds 27053 bytes; expected a multiple of 24 (Elf64_Rela)");
  }
  SUBCASE("not a host library") {
    library[18] = 190;  // EM_CUDA
    auto slots = find_import_slots(Bytes(library.data(), library.size()), "cudaMemcpy", "lib.so");
    REQUIRE_FALSE(slots.ok());
    CHECK(slots.error().message == "lib.so: ELF machine 190; expected a host library (x86-64 62 or AArch64 183)");
  }
  SUBCASE("not an ELF") {
    std::vector<uint8_t> text(100, 'x');
    auto slots = find_import_slots(Bytes(text.data(), text.size()), "cudaMemcpy", "lib.so");
    REQUIRE_FALSE(slots.ok());
    CHECK(slots.error().message.find("lib.so: ELF at offset 0x0: not a 64-bit little-endian ELF header") == 0);
  }
}
