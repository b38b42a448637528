// libFuzzer target: BpteFile::open and the program inside it.
#include "fuzz_input.h"
#include "ptbundle/formats/bpte.h"
#include "inspect/inspect_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ptb::test::input_path(data, size);
  auto bpte = ptb::BpteFile::open(path);
  if (!bpte.ok()) return 0;
  (void)ptb::describe_methods(bpte->program());
  (void)ptb::detail::inspect_bundled(*bpte, {});
  return 0;
}
