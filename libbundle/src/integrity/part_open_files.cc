// The files of an opened part by their path in bundle.json, for checks that
// hash them through the descriptors the part reads (checked_part.h,
// check_bundle_unchanged).
#include "integrity/integrity_internal.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"

namespace ptb::detail {

std::map<std::string, FolderHashOptions::OpenFile> part_open_files(const BundlePart& part) {
  std::map<std::string, FolderHashOptions::OpenFile> out;
  for (const ManifestFile& file : part.entry->files) {
    if (file.role == FileRole::Program) {
      for (const BundleProgram& program : part.programs) {
        if (program.path != file.path) continue;
        const PteFile& pte = program.program->pte();
        out[file.path] = {pte.file().fd(), content_keys_of(pte), {}};
      }
    } else {
      const std::shared_ptr<const PtdFile>& ptd = file.role == FileRole::Data ? part.data : part.testcase;
      if (ptd) out[file.path] = {ptd->file().fd(), content_keys_of(*ptd), {}};
    }
  }
  return out;
}

}  // namespace ptb::detail
