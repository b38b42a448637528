// inspect_path: which reader a path needs (file_kind.h decides), and bundle
// folders (the manifest and every file of every part, each inspected as a
// file of its own).
#include <algorithm>
#include <optional>

#include "inspect/inspect_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/tune_file.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

Result<InspectedFile> file_header(const MappedFile& file, FileKind kind, const std::string& path, const InspectOptions& options,
                                  const detail::InspectDigests& digests) {
  InspectedFile out;
  out.path = path;
  out.kind = file_kind_name(kind);
  out.size = file.size();
  if (options.sha256) {
    PTB_TRY(out.sha256, digests.whole(file));
  }
  return out;
}

// A program on its own: each file of a bundle is shown as itself, its data
// file shown beside it.
Result<InspectedFile> inspected_program(std::shared_ptr<const PteFile> pte, const std::string& path, const InspectOptions& options,
                                        const detail::InspectDigests& digests) {
  PTB_TRY(InspectedFile out, file_header(pte->file(), FileKind::Pte, path, options, digests));
  PTB_TRY(out.body, detail::inspect_program(ProgramWithData(std::move(pte), nullptr), options, digests));
  return out;
}

Result<InspectedFile> inspected_data(const PtdFile& ptd, const std::string& path, const InspectOptions& options,
                                     const detail::InspectDigests& digests) {
  PTB_TRY(InspectedFile out, file_header(ptd.file(), FileKind::Ptd, path, options, digests));
  PTB_TRY(out.body, detail::inspect_data(ptd, options, digests));
  return out;
}

InspectPartFile part_file(const ManifestFile& file, InspectedFile inner) {
  InspectPartFile f{file_role_name(file.role), file.path, file.target, file.size, file.sha256, false, {}, {}};
  f.size_matches = inner.size == file.size;
  if (inner.sha256) f.sha256_matches = *inner.sha256 == file.sha256;
  f.file = std::move(inner);
  return f;
}

}  // namespace

namespace detail {

// A signature file: who signed (the key's fingerprint) and the statement it
// signs, shown as read; inspect does not verify it (verify --key does).
Result<InspectSignature> inspect_signature(const MappedFile& file) {
  PTB_TRY(SignatureFile signature, parse_signature(file.bytes(), file.path()));
  InspectSignature out;
  out.key_fingerprint = signature.key_hint;
  if (signature.statement_error.empty()) out.statement = InspectStatement{std::move(signature.statement)};
  else out.statement_error = std::move(signature.statement_error);
  return out;
}

// Every file of every part, opened as the other commands open them
// (Bundle::open_part): a part that run or merge would refuse is refused here
// with the same words. `out` has its path and kind; its body becomes the
// InspectBundle. With --sha256 every part is opened first, so that all their
// files are hashed at once, one read each, in parallel; without it each part
// is opened, reported (InspectOptions::each_part) and closed in turn, so
// that memory and open files stay those of one part however many a folder
// lists.
Status inspect_bundle_folder(InspectedFile& out, const InspectOptions& options) {
  PTB_TRY(Bundle bundle, Bundle::open(out.path));
  const BundleDir& dir = bundle.dir();
  InspectBundle& inspected = out.body.emplace<InspectBundle>();
  inspected.manifest = bundle.manifest();
  const std::vector<std::shared_ptr<const ManifestPart>> entries = bundle.parts();
  std::vector<BundlePart> opened;
  InspectDigests digests;
  if (options.sha256) {
    for (const auto& entry : entries) {
      PTB_TRY(BundlePart part, bundle.open_part(entry));
      for (const BundleProgram& program : part.programs) want_digests(program.program->pte(), digests);
      for (const auto& data : {part.data, part.testcase})
        if (data) want_digests(*data, digests);
      opened.push_back(std::move(part));
    }
    digests.compute(options.progress, "hashing " + out.path);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    std::optional<BundlePart> own;
    if (!options.sha256) {
      PTB_TRY(BundlePart part, bundle.open_part(entries[i]));
      own = std::move(part);
    }
    const BundlePart& part = options.sha256 ? opened[i] : *own;
    InspectPart p;
    p.name = part.entry->name;
    size_t program = 0;
    for (const ManifestFile& file : part.entry->files) {
      const std::string shown = dir.display(file.path);
      Result<InspectedFile> inner =
          file.role == FileRole::Program
              ? inspected_program(part.programs[program++].program->pte_ptr(), shown, options, digests)
              : inspected_data(file.role == FileRole::Data ? *part.data : *part.testcase, shown, options, digests);
      if (!inner.ok()) return inner.take_error();
      p.files.push_back(part_file(file, std::move(*inner)));
    }
    if (options.each_part) {
      PTB_CHECK(options.each_part(out, std::move(p)));
    } else {
      inspected.parts.push_back(std::move(p));
    }
  }
  if (const auto& listed = inspected.manifest.tune) {
    InspectTune& tune = inspected.tune.emplace();
    tune.path = listed->path;
    tune.size = listed->size;
    tune.sha256 = listed->sha256;
    auto file = read_tune_file(dir, *listed);
    if (!file.ok()) tune.error = file.error().message;
    else {
      for (const TuneGpu& gpu : file->gpus) {
        InspectTuneGpu shown{gpu.name, gpu.sm, gpu.runtime, gpu.tuned, 0, 0, {}, {}};
        for (const TuneChoice& choice : gpu.choices) {
          const bool gemm = choice.shim == "gemm";
          ++(gemm ? shown.gemm : shown.convolution);
          std::vector<uint64_t>& versions = gemm ? shown.cublaslt : shown.cudnn;
          if (std::find(versions.begin(), versions.end(), choice.library) == versions.end()) versions.push_back(choice.library);
        }
        tune.gpus.push_back(std::move(shown));
      }
    }
  }
  if (const std::optional<std::string> name = signature_to_check(dir)) {
    // Inside the folder like every other file: no link followed.
    PTB_TRY(MappedFile file, MappedFile::open_in(dir, *name));
    PTB_TRY(inspected.signature, inspect_signature(file));
    inspected.signature->file = *name;
  }
  return {};
}

}  // namespace detail

Result<InspectedFile> inspect_path(const std::string& path, const InspectOptions& options) {
  PTB_TRY(InputPath input, open_input_path(path));
  if (input.kind == FileKind::Bundle) {
    InspectedFile out;
    out.path = path;
    out.kind = file_kind_name(FileKind::Bundle);
    PTB_CHECK(detail::inspect_bundle_folder(out, options));
    return out;
  }
  // One mapping per file: the bytes that told its kind are the ones its
  // reader parses, and (--sha256) the ones hashed, once, after the parse
  // has said which ranges the model shows.
  MappedFile& mapped = *input.file;
  detail::InspectDigests digests;
  auto header = [&](const MappedFile& file) -> Result<InspectedFile> {
    if (options.sha256) digests.compute(options.progress, "hashing " + path);
    return file_header(file, input.kind, path, options, digests);
  };
  InspectedFile out;
  switch (input.kind) {
    case FileKind::Signature: {
      PTB_TRY(out, header(mapped));
      PTB_TRY(out.body, detail::inspect_signature(mapped));
      break;
    }
    case FileKind::Pt2: {
      // libzip reads the archive through its own handle; the mapping served the kind, size and digest.
      PTB_TRY(out, header(mapped));
      PTB_TRY(out.body, detail::inspect_package(path, options));
      break;
    }
    case FileKind::Pte: {
      auto owner = std::make_shared<const MappedFile>(std::move(mapped));
      Bytes bytes = owner->bytes();
      PTB_TRY(PteFile pte, PteFile::parse(std::move(owner), bytes, path));
      if (options.sha256) detail::want_digests(pte, digests);
      PTB_TRY(out, header(pte.file()));
      PTB_TRY(out.body, detail::inspect_program(ProgramWithData(std::make_shared<const PteFile>(std::move(pte)), nullptr),
                                                options, digests));
      break;
    }
    case FileKind::Ptd: {
      PTB_TRY(PtdFile ptd, PtdFile::parse(std::move(mapped)));
      if (options.sha256) detail::want_digests(ptd, digests);
      PTB_TRY(out, header(ptd.file()));
      PTB_TRY(out.body, detail::inspect_data(ptd, options, digests));
      break;
    }
    case FileKind::Bpte: {
      PTB_TRY(BpteFile bpte, BpteFile::parse(std::move(mapped)));
      if (options.sha256) {
        digests.want(bpte.file());
        detail::want_digests(bpte.program(), digests);
      }
      PTB_TRY(out, header(bpte.file()));
      PTB_TRY(out.body, detail::inspect_bundled(bpte, options, digests));
      break;
    }
    case FileKind::Bundle: break;
  }
  return out;
}

uint64_t offset_alignment(uint64_t file_offset) {
  constexpr uint64_t kCap = 4096;
  if (file_offset == 0) return kCap;
  return std::min(kCap, file_offset & (~file_offset + 1));
}

}  // namespace ptb
