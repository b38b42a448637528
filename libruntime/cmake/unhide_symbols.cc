// unhide_symbols OBJECT PREFIX: gives every global symbol of the ELF64
// relocatable OBJECT whose name starts with PREFIX default visibility, in
// place. Built and run at build time on the static CUDA runtime, whose
// cuda* functions are hidden: a shared object that links it could not
// export them otherwise (cudart_exports.cmake says why they are exported).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

template <class T>
T load(const std::vector<char>& bytes, uint64_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "unhide_symbols: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: unhide_symbols OBJECT PREFIX");
  const std::string prefix = argv[2];
  std::vector<char> bytes;
  {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) return fail(std::string(argv[1]) + ": cannot read");
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (bytes.size() < 64 || std::memcmp(bytes.data(), "\x7f" "ELF\x02\x01", 6) != 0)
    return fail(std::string(argv[1]) + ": not an ELF64 little-endian file");
  const auto shoff = load<uint64_t>(bytes, 40);
  const auto shnum = load<uint16_t>(bytes, 60);
  if (shoff + uint64_t{shnum} * 64 > bytes.size()) return fail("section headers past the end");
  size_t changed = 0;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t header = shoff + uint64_t{i} * 64;
    if (load<uint32_t>(bytes, header + 4) != 2 /* SHT_SYMTAB */) continue;
    const auto offset = load<uint64_t>(bytes, header + 24);
    const auto size = load<uint64_t>(bytes, header + 32);
    const auto link = load<uint32_t>(bytes, header + 40);
    if (link >= shnum || offset + size > bytes.size()) return fail("bad symbol table");
    const uint64_t strings = load<uint64_t>(bytes, shoff + uint64_t{link} * 64 + 24);
    const uint64_t strings_size = load<uint64_t>(bytes, shoff + uint64_t{link} * 64 + 32);
    if (strings + strings_size > bytes.size()) return fail("bad string table");
    for (uint64_t at = offset; at + 24 <= offset + size; at += 24) {
      const auto name = load<uint32_t>(bytes, at);
      const auto info = static_cast<uint8_t>(bytes[at + 4]);
      auto& other = reinterpret_cast<uint8_t&>(bytes[at + 5]);
      if (name >= strings_size || (info >> 4) != 1 /* STB_GLOBAL */ || (other & 3) != 2 /* STV_HIDDEN */) continue;
      if (load<uint16_t>(bytes, at + 6) == 0) continue;  // undefined here
      const char* text = bytes.data() + strings + name;
      if (std::strncmp(text, prefix.c_str(), prefix.size()) != 0) continue;
      other = static_cast<uint8_t>(other & ~3u);
      ++changed;
    }
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return fail(std::string(argv[1]) + ": cannot write");
  std::printf("unhide_symbols: %zu %s* symbols made visible in %s\n", changed, prefix.c_str(), argv[1]);
  return changed > 0 ? 0 : fail("no hidden " + prefix + "* symbol found");
}
