// A part made ready to write: every check has passed and every byte it will
// hold is known, as memory or as ranges of open input files. Nothing in the
// bundle folder has changed yet (scratch files aside, which vanish with it).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/export/export.h"
#include "ptbundle/fb/program_generated.h"
#include "ptbundle/base/file.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/folder_digests.h"

namespace ptb::detail {

// The method an example belongs to: its name and, for an ExecuTorch source,
// the signature the example must match.
struct ExampleTarget {
  std::string method_name = "forward";
  const MethodInfo* method = nullptr;
};

struct PreparedPart {
  std::string name;
  ManifestSource source;

  std::unique_ptr<fb::ProgramT> program;
  std::vector<SegmentSource> pte_segments;

  // NAME.ptd: ExecuTorch's data file copied whole, or contents to write.
  const MappedFile* data_copy = nullptr;
  // Its content-addressed keys, checked from the copy's read (export.cc).
  std::vector<ContentKeyDigest> data_copy_keys;
  std::optional<PtdContents> data_contents;

  std::optional<PtdContents> testcase;
  uint32_t testcase_inputs = 0;
  uint32_t testcase_outputs = 0;
  std::vector<ManifestOutputCheck> output_checks;  // one per expected output

  std::optional<CudaInfo> cuda;
  std::vector<std::string> notes;

  // What the segment sources above point into; unique_ptr keeps addresses
  // stable when the part is moved.
  std::vector<std::shared_ptr<const ProgramWithData>> programs;
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<std::unique_ptr<NpyFile>> npys;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers;
  std::vector<std::unique_ptr<AtomicOutput>> scratch;  // never committed: removed with the part
};

// model.pte [+ data.ptd]: checks keys and delegates, sets data_name.
Result<PreparedPart> prepare_executorch_part(const PartRequest& request);

// package.pt2 + example: converts to a program with one CudaBackend delegate.
// Scratch copies of the library and weights go to `scratch_dir` (the bundle
// folder, so that they can be copied by the kernel into the outputs).
Result<PreparedPart> prepare_aoti_part(const PartRequest& request, const std::string& scratch_dir);

// Loads the example .npy files into part.testcase (keys documented in
// testcase.h), checking them against target.method when it is known.
// `count` outputs whose values the test case does not compare (dtype, shape
// and finiteness only), saying why: an example with inputs only, or (with
// `noise`, the random shims the library imports) a program that draws its
// own noise, whose example outputs fixed only the dtypes and shapes.
void mark_outputs_unchecked(PreparedPart& part, size_t count, const std::vector<std::string>& noise = {});

Status attach_example(PreparedPart& part, const ExampleFiles& example, const ExampleTarget& target);

// The kernels of a part's CUDA libraries: their targets, sorted and
// distinct, for bundle.json; and, when GEMMs or convolutions are Triton
// templates, the note that says how cuBLAS/cuDNN could serve them.
struct PartKernels {
  std::vector<KernelTarget> targets;
  std::string template_note;  // "" when there is nothing to say
};
// `names` label errors.
Result<PartKernels> scan_part_kernels(const std::vector<Bytes>& libraries, const std::vector<std::string>& names);

}  // namespace ptb::detail
