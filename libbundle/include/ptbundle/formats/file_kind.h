// Which of our formats a file holds, told by its bytes: the one sniffer that
// inspect, verify, run and the bundle opener share, so that a file is the
// same kind to every command whatever its name says. The extension decides
// only when the bytes are too few to tell, so that the reader it names
// explains what is wrong.
#pragma once

#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

enum class FileKind {
  Bundle,     // a folder holding bundle.json (never told by bytes)
  Pte,        // an ExecuTorch program: "ET12" at byte 4
  Ptd,        // a FlatTensor data file: "FT01"
  Bpte,       // an ExecuTorch BundledProgram: "BP08"
  Pt2,        // an AOTInductor package: a zip archive
  Signature,  // an OpenSSF model-signing signature: JSON, or a .sig file
};

// "bundle", "pte", "ptd", "bpte", "pt2", "signature": inspect's JSON "kind".
const char* file_kind_name(FileKind kind);

// A file already mapped, so that its reader parses the mapping whose bytes
// told its kind. An error names the file and the bytes found.
Result<FileKind> detect_file_kind(const MappedFile& file);

}  // namespace ptb
