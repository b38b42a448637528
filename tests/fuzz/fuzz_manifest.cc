// libFuzzer target: bundle.json. parse_manifest must accept or refuse every
// text with a one-line error; what it accepts must survive being written and
// read again unchanged (the manifest is rewritten by merge and export --force).
#include <cstdlib>
#include <string_view>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/manifest_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto manifest = ptb::parse_manifest(text, "bundle.json");
  if (!manifest.ok()) {
    if (manifest.error().message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const ptb::Json written = ptb::manifest_to_json(*manifest);
  auto again = ptb::manifest_from_json(written, "written bundle.json");
  if (!again.ok() || ptb::manifest_to_json(*again) != written) std::abort();
  return 0;
}
