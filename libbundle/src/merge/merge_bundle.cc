// `merge_bundles`: bundles of the same parts, exported on different GPUs,
// into one bundle. Each part is merged by its layout (merge.h says how), into
// a temporary folder beside the output that is renamed into place once every
// part and the manifest are written; a refusal leaves no output folder.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "merge/merge_bundle_internal.h"
#include "ptbundle/base/interrupt.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/base/sha256.h"

namespace ptb {

const char* part_merge_layout_name(PartMergeLayout layout) {
  switch (layout) {
    case PartMergeLayout::Identical: return "identical";
    case PartMergeLayout::MultiVariant: return "multi_variant";
    case PartMergeLayout::PerTarget: return "per_target";
  }
  return "identical";
}

namespace detail {
namespace {

namespace fs = std::filesystem;

// An input bundle with every part opened (Bundle::open_part): each file is
// read through the descriptor that was checked, never reopened by path.
struct InputBundle {
  std::string dir;
  Bundle bundle;
  std::map<std::string, BundlePart, std::less<>> parts;
  const Manifest& manifest() const { return bundle.manifest(); }
  const BundlePart& part(const std::string& name) const { return parts.find(name)->second; }
};

// A folder that is removed with everything in it unless kept: by the
// destructor, by the signal handler on SIGINT/SIGTERM (register_temp_path),
// and after a SIGKILL by the next merge into the same output, which removes
// the staging folders no process holds locked (remove_stale_staging).
class Staging {
 public:
  static Result<Staging> create(const fs::path& output) {
    fs::path parent = output.parent_path().empty() ? fs::path(".") : output.parent_path();
    // mkdtemp's names, but mkdir's mode (0777 less the umask), as export's
    // folders get: mkdtemp's 0700 would keep other users from reading the bundle.
    static const char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::random_device random;
    std::string made;
    // Held back from the mkdir to the registration: a signal between them
    // would leave the folder behind.
    DeferInterrupts defer;
    for (int attempt = 0; attempt < 100 && made.empty(); ++attempt) {
      std::string name = "." + output.filename().string() + ".merge-";
      for (int i = 0; i < 6; ++i) name += kLetters[random() % (sizeof kLetters - 1)];
      std::string path = (parent / name).string();
      if (::mkdir(path.c_str(), 0777) == 0) made = path;
      else if (errno != EEXIST)
        return io_error(output.string() + ": cannot create a temporary folder beside it: " + std::strerror(errno));
    }
    if (made.empty()) return io_error(output.string() + ": cannot create a temporary folder beside it: every name tried exists");
    Staging staging;
    staging.path_ = made;
    staging.slot_ = register_temp_path(staging.path_.string(), /*folder=*/true);
    staging.fd_ = ::open(made.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (staging.fd_ < 0) return io_error(staging.path_.string() + ": cannot open the staging folder: " + std::strerror(errno));
    ::flock(staging.fd_, LOCK_EX | LOCK_NB);  // ours alone: we made it
    // What makes it ours for the next merge too, should this one be killed.
    PTB_CHECK(mark_staging(staging.fd_, staging.path_.string()));
    return staging;
  }
  Staging() = default;
  Staging(Staging&& other) noexcept
      : path_(std::exchange(other.path_, fs::path())),
        fd_(std::exchange(other.fd_, -1)),
        slot_(std::exchange(other.slot_, -1)) {}
  Staging& operator=(Staging&&) = delete;
  ~Staging() {
    unregister_temp_path(slot_);
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
    if (fd_ >= 0) ::close(fd_);
  }
  const fs::path& path() const { return path_; }
  // The folder has become the merged bundle: without the marker, that a
  // stale staging folder carries.
  Status unmark() { return unmark_staging(fd_, path_.string()); }
  void keep() {
    unregister_temp_path(std::exchange(slot_, -1));
    path_.clear();
  }

 private:
  fs::path path_;
  int fd_ = -1;
  int slot_ = -1;
};

std::string in_bundle(const InputBundle& bundle, const std::string& relative) {
  return (fs::path(bundle.dir) / relative).string();
}

// Whether every library of the program holds PTX and no cubin.
Result<bool> is_ptx_only(const Export& e, LibraryScanCache& scans) {
  bool any_ptx = false;
  for (const CudaDelegate& delegate : e.cuda) {
    for (const CudaVariant& variant : delegate.payload->variants) {
      const PteNamedData* entry = e.pte().find_named_data(variant.so_key);
      if (!entry) return false;  // merge_programs names the missing library
      std::string name = e.name() + ": named data '" + variant.so_key + "'";
      PTB_TRY(const LibraryKernels* kernels, scans.get(variant.so_key, e.pte().named_data_bytes(*entry), name, &e.pte()));
      if (!kernels->cubin_sms.empty()) return false;
      any_ptx = any_ptx || !kernels->ptx_sms.empty();
    }
  }
  return any_ptx;
}

// The error for an input file whose bytes, as merge reads them, are not the
// ones its bundle.json records: it changed after the input was checked.
Error input_changed(const std::string& input, const ManifestFile& recorded, uint64_t size, const std::string& sha256) {
  return invalid(input + ": its bytes hash to sha256:" + sha256 + " (" + std::to_string(size) +
                 " bytes) as merge reads them; its bundle.json records sha256:" + recorded.sha256 + " (" +
                 std::to_string(recorded.size) +
                 " bytes): the file changed after it was checked; nothing was written; restore it (or export the part again) and merge again");
}

// Copies an input's file (`source`, as its bundle opened it) into the staging
// folder: each chunk is hashed and written from the same buffer, so the input
// is read once and the digest recorded is of the very bytes the merged bundle
// holds. They must be the bytes `recorded` (the input's bundle.json entry)
// describes: an input changed in place since check_inputs_unchanged read it
// is refused, never carried into a bundle whose fresh bundle.json would make
// the change look approved.
Result<ManifestFile> copy_checked(const MappedFile& source, const ManifestFile& recorded, const fs::path& staging,
                                  const std::string& relative, FileRole role, std::optional<std::string> target,
                                  const Progress& progress) {
  const fs::path to = staging / relative;
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (ec) return io_error(to.parent_path().string() + ": cannot create the folder: " + ec.message());
  PTB_TRY(AtomicOutput out, AtomicOutput::create(to.string()));
  test_kill_point("merge-copy");
  FileDigest digest;
  digest.path = source.path();
  ProgressCounter counter(progress, source.size(), "writing " + to.string());
  hash_open_file_copying(source.fd(), digest, [&](Bytes chunk) -> std::string {
    if (Status written = out.write(chunk); !written.ok()) return written.error().message;
    counter.add(chunk.size());
    return {};
  });
  if (!digest.error.empty()) return io_error(source.path() + ": " + digest.error);
  if (digest.size != recorded.size || digest.sha256 != recorded.sha256 || out.position() != digest.size)
    return input_changed(source.path(), recorded, digest.size, digest.sha256);
  PTB_CHECK(out.commit());
  ManifestFile file;
  file.role = role;
  file.path = relative;
  file.target = std::move(target);
  file.size = digest.size;
  file.sha256 = digest.sha256;
  return file;
}

// A file the merge wrote itself (a merged program, its weights), hashed.
Result<ManifestFile> file_entry(const fs::path& staging, const std::string& relative, FileRole role) {
  ManifestFile file;
  file.role = role;
  file.path = relative;
  std::string path = (staging / relative).string();
  std::error_code ec;
  file.size = fs::file_size(path, ec);
  if (ec) return io_error(path + ": cannot read its size: " + ec.message());
  PTB_TRY(file.sha256, sha256_file(path));
  return file;
}

// One program of the part, as its bundle opened it (with the part's data
// file); every step below reads it from here.
struct OpenedProgram {
  PartProgram paths;
  size_t bundle = 0;
  std::shared_ptr<const ProgramWithData> program;
};

std::vector<OpenedProgram> programs_of(const std::vector<InputBundle>& bundles, const std::string& name) {
  std::vector<OpenedProgram> out;
  for (size_t b = 0; b < bundles.size(); ++b) {
    const BundlePart& part = bundles[b].part(name);
    const ManifestFile* data = part.entry->find_file(FileRole::Data);
    for (const BundleProgram& program : part.programs) {
      PartProgram paths{in_bundle(bundles[b], program.path), data ? in_bundle(bundles[b], data->path) : "",
                        program.target.value_or("")};
      out.push_back({std::move(paths), b, program.program});
    }
  }
  return out;
}

// The programs of a CUDA part with their data files, as merge inputs that
// take every payload form.
Result<std::vector<Export>> load_exports(const std::vector<OpenedProgram>& programs) {
  std::vector<Export> out;
  out.reserve(programs.size());
  for (const OpenedProgram& opened : programs) {
    PTB_TRY(Export e, export_of({opened.paths.pte, opened.paths.ptd}, opened.program, false, false));
    out.push_back(std::move(e));
  }
  return out;
}

// The first program of each bundle (what the manifest lists first), mapped
// when it was opened.
const MappedFile* first_program_of(const std::vector<OpenedProgram>& programs, size_t bundle) {
  for (const OpenedProgram& opened : programs) {
    if (opened.bundle == bundle) return &opened.program->pte().file();
  }
  return nullptr;
}

// Parts without a CUDA delegate are not merged: they must be the same files.
// The first bundle's mappings are what the part is copied from.
struct IdenticalFiles {
  const MappedFile* program = nullptr;
  const MappedFile* data = nullptr;
};

Status check_identical_files(const std::vector<InputBundle>& bundles, const std::string& name,
                             const std::vector<OpenedProgram>& programs, unsigned threads, const Progress& progress,
                             IdenticalFiles& first_files) {
  const ManifestPart& first = *bundles.front().manifest().find_part(name);
  auto mapped = [&](size_t b, FileRole role) -> const MappedFile* {
    if (role == FileRole::Program) return first_program_of(programs, b);
    return &bundles[b].part(name).data->file();
  };
  for (size_t b = 1; b < bundles.size(); ++b) {
    const ManifestPart& other = *bundles[b].manifest().find_part(name);
    for (FileRole role : {FileRole::Program, FileRole::Data}) {
      const ManifestFile* mine = first.find_file(role);
      const ManifestFile* theirs = other.find_file(role);
      std::string pair = in_bundle(bundles.front(), mine ? mine->path : name) + " and " +
                         in_bundle(bundles[b], theirs ? theirs->path : name);
      if (!mine || !theirs) {
        if (mine || theirs) return invalid(pair + ": only one of the bundles has a " + file_role_name(role) + " file for part '" + name + "'");
        continue;
      }
      const MappedFile* a = mapped(0, role);
      const MappedFile* c = mapped(b, role);
      if (a->size() != c->size()) {
        return invalid(pair + " differ in size (" + std::to_string(a->size()) + " vs " + std::to_string(c->size()) +
                       " bytes); expected the same files, as part '" + name + "' has no CUDA delegate to merge");
      }
      CompareStats stats;
      stats.progress = progress;
      if (auto mismatch = compare_groups({{Blob{a->bytes(), a}, {Blob{c->bytes(), c}}}}, threads, stats)) {
        return invalid(pair + " differ at byte " + std::to_string(mismatch->offset) + "; expected the same files, as part '" +
                       name + "' has no CUDA delegate to merge");
      }
    }
  }
  first_files.program = first_program_of(programs, 0);
  if (const BundlePart& part = bundles.front().part(name); part.data) first_files.data = &part.data->file();
  return {};
}

// Kernel targets of every bundle's part, each once.
std::optional<CudaInfo> merged_cuda_info(const std::vector<InputBundle>& bundles, const std::string& name) {
  std::optional<CudaInfo> out;
  bool same_gpu = true;
  for (const InputBundle& bundle : bundles) {
    const ManifestPart& part = *bundle.manifest().find_part(name);
    if (!part.cuda) continue;
    if (!out) {
      out = *part.cuda;
      continue;
    }
    for (const KernelTarget& target : part.cuda->kernel_targets) {
      bool known = std::any_of(out->kernel_targets.begin(), out->kernel_targets.end(), [&](const KernelTarget& k) {
        return k.target == target.target && k.kind == target.kind;
      });
      if (!known) out->kernel_targets.push_back(target);
    }
    auto same = [](const std::optional<BuildGpu>& a, const std::optional<BuildGpu>& b) {
      if (!a || !b) return !a && !b;
      return a->name == b->name && a->compute_capability == b->compute_capability && a->driver_version == b->driver_version;
    };
    same_gpu = same_gpu && same(out->built_on, part.cuda->built_on);
    // Each program keeps its library and the constants compiled into it:
    // one recorded digest only when every bundle's is the same.
    out->weights_in_library = out->weights_in_library || part.cuda->weights_in_library;
    if (out->constants && (!part.cuda->constants || part.cuda->constants->sha256 != out->constants->sha256))
      out->constants.reset();
    if (part.cuda->runtime == std::optional<std::string>("LibTorch")) out->runtime = part.cuda->runtime;
  }
  if (out) {
    std::sort(out->kernel_targets.begin(), out->kernel_targets.end(), [](const KernelTarget& a, const KernelTarget& b) {
      return std::tie(a.sm, a.kind, a.target) < std::tie(b.sm, b.kind, b.target);
    });
    // Built on several GPUs: no one of them describes the merged part.
    if (!same_gpu) out->built_on.reset();
  }
  return out;
}

struct PartJob {
  const std::vector<InputBundle>& bundles;
  const std::string& name;
  const fs::path& staging;
  const BundleMergeRequest& request;
  LibraryScanCache& scans;
};

// The part as one multi-variant program, merged by merge_programs' rules: a
// bundle made from a PTX-only export is the fallback (a bundle has no
// --fallback to say so, and its kernels do).
// `reference`: which of `exports` the merged program's data file is a copy of.
Result<MergeResult> merge_multi_variant(const PartJob& job, const std::vector<Export>& exports, bool has_data,
                                        size_t& reference) {
  MergeRequest request;
  std::vector<size_t> regular_of;  // exports' index of each request.inputs
  std::optional<size_t> fallback_of;
  for (size_t i = 0; i < exports.size(); ++i) {
    PTB_TRY(bool ptx_only, is_ptx_only(exports[i], job.scans));
    if (!ptx_only) {
      request.inputs.push_back(exports[i].source);
      regular_of.push_back(i);
    } else if (request.fallback) {
      return invalid(request.fallback->pte_path + " and " + exports[i].name() + " both hold only PTX for part '" + job.name +
                     "'; expected at most one PTX fallback");
    } else {
      request.fallback = exports[i].source;
      fallback_of = i;
    }
  }
  if (request.inputs.empty()) {
    return invalid("part '" + job.name + "': every bundle holds only PTX; expected at least one with cubins");
  }
  reference = regular_of.front();
  request.output_pte = (job.staging / part_file_path(job.name, FileRole::Program)).string();
  if (has_data) request.output_ptd = (job.staging / part_file_path(job.name, FileRole::Data)).string();
  request.threads = job.request.threads;
  request.progress = job.request.progress;
  PTB_CHECK(check_merge_request(request));
  // The programs as opened, now held to the multi-variant form's rules.
  std::vector<Export> regular;
  regular.reserve(regular_of.size());
  for (size_t i : regular_of) {
    PTB_TRY(Export e, export_of(exports[i].source, exports[i].program, false));
    regular.push_back(std::move(e));
  }
  std::unique_ptr<Export> fallback;
  if (fallback_of) {
    PTB_TRY(Export e, export_of(exports[*fallback_of].source, exports[*fallback_of].program, true));
    fallback = std::make_unique<Export>(std::move(e));
  }
  return merge_exports(request, std::move(regular), std::move(fallback), job.scans);
}

// The bundle.json entry of one opened program: the entry of its bundle's
// part whose path is the program's.
Result<const ManifestFile*> recorded_program(const PartJob& job, const OpenedProgram& opened) {
  const InputBundle& bundle = job.bundles[opened.bundle];
  for (const ManifestFile& file : bundle.part(job.name).entry->files)
    if (file.role == FileRole::Program && in_bundle(bundle, file.path) == opened.paths.pte) return &file;
  return invalid(opened.paths.pte + ": not a program its bundle.json lists for part '" + job.name + "'");
}

// Writes the part into the staging folder; returns how, and its files (the
// data file too, except where the part holds none).
Result<std::pair<MergedPart, std::vector<ManifestFile>>> merge_part(const PartJob& job) {
  MergedPart merged;
  merged.name = job.name;
  const ManifestPart& first = *job.bundles.front().manifest().find_part(job.name);
  std::vector<OpenedProgram> programs = programs_of(job.bundles, job.name);
  bool any_cuda = false;
  bool any_targeted = false;
  for (const OpenedProgram& opened : programs) {
    any_cuda = any_cuda || opened.program->has_cuda();
    any_targeted = any_targeted || !opened.paths.target.empty();
  }
  std::string data_path = part_file_path(job.name, FileRole::Data);
  const ManifestFile* data = first.find_file(FileRole::Data);
  std::vector<ManifestFile> files;

  if (!any_cuda) {
    IdenticalFiles copied;
    PTB_CHECK(check_identical_files(job.bundles, job.name, programs, job.request.threads, job.request.progress, copied));
    merged.layout = PartMergeLayout::Identical;
    std::string program_path = part_file_path(job.name, FileRole::Program);
    PTB_TRY(ManifestFile program, copy_checked(*copied.program, *first.find_file(FileRole::Program), job.staging,
                                               program_path, FileRole::Program, std::nullopt, job.request.progress));
    files.push_back(program);
    if (data && copied.data) {
      PTB_TRY(ManifestFile entry,
              copy_checked(*copied.data, *data, job.staging, data_path, FileRole::Data, std::nullopt, job.request.progress));
      files.push_back(entry);
    }
    return std::make_pair(merged, files);
  }

  PTB_TRY(std::vector<Export> exports, load_exports(programs));
  bool multi_variant = !any_targeted;
  if (multi_variant) {
    for (const Export& e : exports) {
      bool this_multi = std::all_of(e.cuda.begin(), e.cuda.end(), [](const CudaDelegate& d) {
        return d.payload->form == CudaPayloadForm::MultiVariant;
      });
      if (e.name() == exports.front().name()) multi_variant = this_multi;
      else if (this_multi != multi_variant) {
        return invalid(exports.front().name() + " and " + e.name() + " keep part '" + job.name +
                       "' in different CUDA layouts (multi-variant and single-blob); expected one layout across the bundles");
      }
    }
  }

  if (multi_variant) {
    merged.layout = PartMergeLayout::MultiVariant;
    size_t reference = 0;
    PTB_TRY(MergeResult result, merge_multi_variant(job, exports, data != nullptr, reference));
    merged.provenance = std::move(result.provenance);
    PTB_TRY(ManifestFile program, file_entry(job.staging, part_file_path(job.name, FileRole::Program), FileRole::Program));
    files.push_back(program);
    if (data) {
      // The weights are the reference program's data file, copied whole by
      // the kernel: hashed here, they must be the bytes its bundle.json
      // records, or that input changed after it was checked.
      const OpenedProgram& source = programs[reference];
      const ManifestFile* recorded = job.bundles[source.bundle].part(job.name).entry->find_file(FileRole::Data);
      PTB_TRY(ManifestFile entry, file_entry(job.staging, data_path, FileRole::Data));
      if (!recorded || entry.size != recorded->size || entry.sha256 != recorded->sha256)
        return input_changed(source.paths.ptd, recorded ? *recorded : ManifestFile{}, entry.size, entry.sha256);
      files.push_back(entry);
    }
    return std::make_pair(merged, files);
  }

  merged.layout = PartMergeLayout::PerTarget;
  std::vector<PartProgram> all;
  for (const OpenedProgram& opened : programs) all.push_back(opened.paths);
  PTB_TRY(PerTargetPlan plan, plan_per_target(all, std::move(exports), job.scans, job.request.threads));
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(plan.targets[a].ptx, plan.targets[a].sm) < std::tie(plan.targets[b].ptx, plan.targets[b].sm);
  });
  for (size_t i : order) {
    std::string program_path = part_target_program_path(job.name, plan.targets[i].name());
    PTB_TRY(const ManifestFile* recorded, recorded_program(job, programs[i]));
    PTB_TRY(ManifestFile program, copy_checked(plan.exports[i].pte().file(), *recorded, job.staging, program_path,
                                               FileRole::Program, plan.targets[i].name(), job.request.progress));
    files.push_back(program);
  }
  for (size_t i : order) {
    for (const VariantOrigin& origin : plan.provenance) {
      if (origin.source_pte == plan.exports[i].name()) merged.provenance.push_back(origin);
    }
  }
  const PtdFile* shared_data = plan.exports.front().ptd();
  if (data && shared_data) {
    const ManifestFile* recorded = job.bundles[programs.front().bundle].part(job.name).entry->find_file(FileRole::Data);
    if (!recorded) return invalid(programs.front().paths.pte + ": its bundle lists no data file for part '" + job.name + "'");
    PTB_TRY(ManifestFile entry, copy_checked(shared_data->file(), *recorded, job.staging, data_path, FileRole::Data,
                                             std::nullopt, job.request.progress));
    files.push_back(entry);
  }
  return std::make_pair(merged, files);
}

// One input checked through the mappings merge then reads (integrity.h).
Status check_opened(const InputBundle& input, const IntegrityOptions& options) {
  std::vector<const BundlePart*> parts;
  for (const auto& [name, part] : input.parts) parts.push_back(&part);
  return check_bundle_unchanged(input.bundle, parts, options);
}

// Each input as verify would check it (digests, content keys, signature),
// so a tampered input is refused rather than laundered into a bundle whose
// fresh bundle.json makes the change look approved. The bundles are hashed
// side by side, each on its share of the cores; every byte is read once here.
Status check_inputs_unchanged(const std::vector<InputBundle>& bundles, const BundleMergeRequest& request) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  IntegrityOptions options;
  options.keys = request.keys;
  options.threads = std::max<unsigned>(1, cores / static_cast<unsigned>(bundles.size()));
  // The bundles are hashed at once: their steps are reported as one.
  uint64_t listed_bytes = 0;
  for (const InputBundle& bundle : bundles)
    for (const ManifestPart& part : bundle.manifest().parts)
      for (const ManifestFile& file : part.files) listed_bytes += file.size;
  ProgressCounter all(request.progress, listed_bytes, "checking the input bundles");
  std::vector<uint64_t> reported(bundles.size(), 0);
  std::vector<IntegrityOptions> per_bundle(bundles.size(), options);
  for (size_t b = 0; b < bundles.size() && request.progress; ++b) {
    per_bundle[b].progress = [&all, &reported, b](uint64_t done, uint64_t, const std::string&) {
      if (done > reported[b]) all.add(done - reported[b]);
      reported[b] = std::max(reported[b], done);
    };
  }
  std::vector<Status> results(bundles.size());
  std::vector<std::thread> pool;
  for (size_t b = 1; b < bundles.size(); ++b)
    pool.emplace_back([&, b] { results[b] = check_opened(bundles[b], per_bundle[b]); });
  results[0] = check_opened(bundles[0], per_bundle[0]);
  for (auto& thread : pool) thread.join();
  for (const Status& status : results) PTB_CHECK(status);
  return {};
}

Result<std::vector<InputBundle>> read_bundles(const BundleMergeRequest& request) {
  std::vector<InputBundle> bundles;
  for (const std::string& dir : request.bundles) {
    // Every part opened before anything is merged: a bad input is refused
    // as run, verify and inspect refuse it, before any output is written.
    PTB_TRY(Bundle bundle, Bundle::open(dir));
    InputBundle input{dir, std::move(bundle), {}};
    for (const auto& part : input.bundle.parts()) {
      PTB_TRY(BundlePart opened, input.bundle.open_part(part));
      input.parts.emplace(part->name, std::move(opened));
    }
    bundles.push_back(std::move(input));
  }
  test_kill_point("inputs-opened");
  PTB_CHECK(check_inputs_unchanged(bundles, request));
  test_kill_point("inputs-checked");
  const Manifest& first = bundles.front().manifest();
  for (size_t b = 1; b < bundles.size(); ++b) {
    const Manifest& other = bundles[b].manifest();
    for (const ManifestPart& part : first.parts) {
      if (!other.find_part(part.name)) {
        return invalid(bundles.front().dir + " and " + bundles[b].dir + " hold different parts: '" + part.name +
                       "' only in " + bundles.front().dir + "; expected the same parts in every bundle");
      }
    }
    for (const ManifestPart& part : other.parts) {
      if (!first.find_part(part.name)) {
        return invalid(bundles.front().dir + " and " + bundles[b].dir + " hold different parts: '" + part.name +
                       "' only in " + bundles[b].dir + "; expected the same parts in every bundle");
      }
    }
  }
  return bundles;
}

Status check_bundle_request(const BundleMergeRequest& request) {
  if (request.bundles.size() < 2) return usage_error("merge: expected at least two bundle folders");
  if (request.output_dir.empty()) return usage_error("merge: no output; expected -o OUT_DIR");
  std::error_code ec;
  fs::path output(request.output_dir);
  for (const std::string& bundle : request.bundles) {
    if (fs::equivalent(bundle, output, ec)) {
      return usage_error("merge: -o " + request.output_dir + " is one of the input bundles; expected a new folder");
    }
    // Inside an input, the output would become a folder of that bundle: an
    // unlisted folder its signature does not list.
    const fs::path inside = fs::weakly_canonical(output, ec).lexically_relative(fs::weakly_canonical(bundle, ec));
    if (!inside.empty() && inside != "." && *inside.begin() != "..") {
      return usage_error("merge: -o " + request.output_dir + " is inside the input bundle " + bundle +
                         ", which it would change (and break its signature); expected a folder outside every input");
    }
  }
  if (fs::exists(output, ec) && !(fs::is_directory(output, ec) && fs::is_empty(output, ec))) {
    return usage_error("merge: " + request.output_dir + " already exists and is not an empty folder; expected a new folder");
  }
  return {};
}

}  // namespace
}  // namespace detail

Result<BundleMergeResult> merge_bundles(const BundleMergeRequest& request) {
  using namespace detail;
  PTB_CHECK(check_bundle_request(request));
  PTB_TRY(std::vector<InputBundle> bundles, read_bundles(request));
  remove_stale_staging(request.output_dir);
  PTB_TRY(Staging staging, Staging::create(request.output_dir));
  LibraryScanCache scans(true);

  BundleMergeResult result;
  result.output_dir = request.output_dir;
  Manifest& manifest = result.manifest;
  manifest.ptbundle_version = request.tool_version;
  manifest.created = utc_now_iso8601();
  for (const ManifestPart& first : bundles.front().manifest().parts) {
    PTB_TRY(auto merged, merge_part({bundles, first.name, staging.path(), request, scans}));
    ManifestPart part = first;
    part.source.kind = "merge";
    part.source.files.clear();
    for (const InputBundle& bundle : bundles) part.source.files.push_back(fs::path(bundle.dir).filename().string());
    part.files = std::move(merged.second);
    if (const ManifestFile* testcase = first.find_file(FileRole::Testcase)) {
      PTB_TRY(ManifestFile entry, copy_checked(bundles.front().part(first.name).testcase->file(), *testcase, staging.path(),
                                               testcase->path, FileRole::Testcase, std::nullopt, request.progress));
      part.files.push_back(entry);
    }
    part.cuda = merged_cuda_info(bundles, first.name);
    manifest.parts.push_back(std::move(part));
    result.parts.push_back(std::move(merged.first));
  }
  PTB_CHECK(write_manifest(staging.path().string(), manifest));

  test_kill_point("merge-rename");
  std::error_code ec;
  // The rename and forgetting the staging folder are one step for a signal:
  // once renamed, the handler must not remove the merged bundle's old name,
  // and the command has succeeded.
  DeferInterrupts defer;
  if (fs::exists(request.output_dir, ec)) fs::remove(request.output_dir, ec);  // an empty folder, checked above
  fs::rename(staging.path(), request.output_dir, ec);
  if (ec) return io_error(request.output_dir + ": cannot move the merged bundle into place: " + ec.message());
  staging.keep();
  defer.committed();
  // Killed before this, the marker is a temporary file of the merged bundle,
  // which verify names and the next writer removes.
  test_kill_point("merge-unmark");
  (void)staging.unmark();
  return result;
}

}  // namespace ptb
