// libFuzzer target: PteFile::open, then everything a caller may do with a
// program that opened (describe it, read every segment and payload, decode
// CUDA payloads, build the inspect model). Built by scripts/fuzz.
#include "fuzz_input.h"
#include "ptbundle/formats/cuda_payload.h"
#include "inspect/inspect_internal.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/base/sha256.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ptb::test::input_path(data, size);
  auto pte = ptb::PteFile::open(path);
  if (!pte.ok()) {
    if (pte.error().message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const ptb::ProgramWithData program(std::make_shared<const ptb::PteFile>(std::move(*pte)), nullptr);
  const auto& methods = program.methods();
  const ptb::PteFile* opened = &program.pte();
  for (size_t s = 0; s < opened->segments().size(); ++s) (void)ptb::sha256(opened->segment_bytes(s));
  for (const auto& entry : opened->named_data()) (void)opened->named_data_bytes(entry);
  for (size_t p = 0; p < methods.size(); ++p) {
    for (size_t d = 0; d < methods[p].delegates.size(); ++d) {
      (void)ptb::decode_cuda_payload(opened->delegate_payload(p, d), methods[p].name, "fuzz");
    }
  }
  ptb::InspectOptions options;
  options.sha256 = true;
  (void)ptb::detail::inspect_program(program, options);
  return 0;
}
