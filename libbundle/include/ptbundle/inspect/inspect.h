// What `ptbundle inspect` reports about a path: the typed model of
// inspect_model.h, in the form documented by schemas/inspect.schema.json and
// man/ptbundle-inspect.1. It is built here, not in the CLI, so that
// benchmarks and other commands can call it; the CLI renders the same model
// as text or as JSON.
//
// Blob bytes are only read for --sha256 (streamed through a small buffer)
// and by the kernel scanner (libkernels) for the GPU code of each library.
#pragma once

#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/inspect/inspect_model.h"

namespace ptb {

struct InspectOptions {
  bool sha256 = false;
};

// "pte", "ptd", "bpte", "pt2", "bundle" (a folder with bundle.json),
// "signature" (a .sig file, or JSON: a model-signing signature), or an
// error when the file is none of these. The content decides; the extension
// only when the content is too short to tell.
Result<std::string> detect_inspect_kind(const std::string& path);
// The same for a file already mapped, so that its reader can parse that mapping.
Result<std::string> detect_file_kind(const MappedFile& file);

// What one path holds. Errors are those of the readers (the whole file is
// refused, as ptbundle refuses to load it).
Result<InspectedFile> inspect_path(const std::string& path, const InspectOptions& options = {});

// The largest power of two that divides `file_offset`, at most 4096: the
// alignment a loader can rely on when it maps the file.
uint64_t offset_alignment(uint64_t file_offset);

}  // namespace ptb
