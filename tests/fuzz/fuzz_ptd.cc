// libFuzzer target: PtdFile::open, every blob read, the inspect model built.
#include "fuzz_input.h"
#include "inspect/inspect_internal.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/base/sha256.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ptb::test::input_path(data, size);
  auto ptd = ptb::PtdFile::open(path);
  if (!ptd.ok()) {
    if (ptd.error().message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  for (const auto& entry : ptd->entries()) {
    (void)ptb::sha256(ptd->bytes(entry));
    if (ptd->find(entry.key) == nullptr) std::abort();
  }
  ptb::InspectOptions options;
  options.sha256 = true;
  (void)ptb::detail::inspect_data(*ptd, options);
  return 0;
}
