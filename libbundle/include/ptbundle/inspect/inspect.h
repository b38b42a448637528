// What `ptbundle inspect` reports about a path: the typed model of
// inspect_model.h, in the form documented by schemas/inspect.schema.json and
// man/ptbundle-inspect.1. It is built here, not in the CLI, so that
// benchmarks and other commands can call it; the CLI renders the same model
// as text or as JSON.
//
// Blob bytes are only read for --sha256 (streamed through a small buffer)
// and by the kernel scanner (libkernels) for the GPU code of each library.
#pragma once

#include <functional>
#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/base/result.h"
#include "ptbundle/inspect/inspect_model.h"

namespace ptb {

struct InspectOptions {
  bool sha256 = false;
  Progress progress;  // with sha256: the bytes as they are hashed
  // A bundle folder may list tens of thousands of parts. When set, each part
  // goes here as soon as it is inspected, in bundle.json's order, and
  // InspectBundle::parts stays empty: a caller that prints each part as it
  // comes holds one part in memory, not all of them. `bundle` is the folder's
  // report so far (path, kind and manifest set). An error it returns stops
  // the inspection and is inspect_path's error.
  std::function<Status(const InspectedFile& bundle, InspectPart part)> each_part;
};

// What one path holds; its kind (InspectedFile::kind) is file_kind.h's
// FileKind by name. Errors are those of the readers and of the bundle opener
// (bundle.h): the whole file or bundle is refused, as ptbundle refuses to
// load it.
Result<InspectedFile> inspect_path(const std::string& path, const InspectOptions& options = {});

// The largest power of two that divides `file_offset`, at most 4096: the
// alignment a loader can rely on when it maps the file.
uint64_t offset_alignment(uint64_t file_offset);

}  // namespace ptb
