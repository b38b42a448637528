// bundle.json: what a bundle holds, so that `verify` and `run` need to guess
// nothing. Its JSON Schema is schemas/bundle.schema.json; the field meanings
// are documented there. Written with nlohmann::ordered_json so keys keep the
// order below; read back with every field checked: types, known keys only,
// part names (check_part_name, no case collisions) and file paths, which must
// be exactly the paths derived from the part name. A hand-edited manifest
// therefore cannot make ptbundle read or write outside the bundle folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/formats/method_info.h"
#include "ptbundle/base/result.h"
#include "ptbundle/kernels/gpu_target.h"  // is_gpu_target_name: a target's folder and a program's "target"

namespace ptb {

inline constexpr int kManifestFormatVersion = 1;
inline constexpr const char* kManifestFileName = "bundle.json";
inline constexpr const char* kTestcaseFolder = "testcases";
inline constexpr const char* kTuneFileName = "tune.json";
// "tune.json", or "tune@<g>.json" for generation g > 0: `ptbundle tune`
// writes a new generation and bundle.json names it, so that the old file
// stays whole until bundle.json is renamed over (part_file_path's rule).
std::string tune_file_path(unsigned generation = 0);
bool is_tune_file_path(std::string_view path);

enum class FileRole { Program, Data, Testcase };
const char* file_role_name(FileRole role);  // "program", "data", "testcase"

// "<name>.pte", "<name>.ptd", "testcases/<name>.ptd": the paths of a part,
// relative to the bundle folder. A writer that replaces a part puts the new
// files under names the old manifest does not use, so that the old bundle
// stays whole until bundle.json is renamed over it: generation g > 0 gives
// "<name>@<g>.pte" ('@' is not allowed in part names, so no other part can
// have that path). Readers follow the paths bundle.json lists.
std::string part_file_path(std::string_view part_name, FileRole role, unsigned generation = 0);
// Whether `path` is part_file_path(name, role, g) (or, with a target,
// part_target_program_path(name, target, g)) for some generation g.
bool is_part_file_path(std::string_view path, std::string_view part_name, FileRole role,
                       const std::optional<std::string>& target = std::nullopt);

// Keys of a test case file (testcases/<name>.ptd): "<method>.input.<i>" and
// "<method>.output.<i>", each a named tensor with its layout (dtype, sizes,
// contiguous dim order).
std::string testcase_key(std::string_view method, bool output, size_t index);

struct ManifestFile {
  FileRole role = FileRole::Program;
  std::string path;  // part_file_path(name, role), or part_target_program_path(name, *target)
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
  // Program files only: set when the part keeps one program per GPU target
  // (`merge` of bundles in ExecuTorch's older single-blob CUDA layout, whose
  // programs cannot hold several variants); the programs then share the
  // part's data file. "sm_90", or "compute_75" for a PTX-only program.
  std::optional<std::string> target{};
};

// "<target>/<name>.pte": the program of a part for one GPU target. A folder
// per target, because a part name may contain '.' and "<name>.<target>.pte"
// could be another part's program.
std::string part_target_program_path(std::string_view part_name, std::string_view target, unsigned generation = 0);

struct ManifestValue {
  std::string kind;   // "tensor", or the value kind from describe_methods ("int", "none", ...)
  std::string dtype;  // tensors: scalar_type_name ("float32")
  std::vector<int64_t> shape;
  std::string dynamism;  // tensors: "static", "dynamic_bound", "dynamic_unbound"
};

struct ManifestDelegate {
  std::string id;                        // "CudaBackend"
  std::optional<std::string> data_name;  // its data_name compile spec
};

struct ManifestMethod {
  std::string name;
  std::vector<ManifestValue> inputs;
  std::vector<ManifestValue> outputs;
  std::vector<ManifestDelegate> delegates;
};

// What bundle.json records of a method of a program: export writes it, and
// verify compares it with the program found on disk.
ManifestMethod manifest_method(const MethodInfo& method);


struct KernelTarget {
  std::string target;  // "sm_90", "sm_90a", "compute_75"
  uint32_t sm = 0;
  std::string kind;  // "cubin" or "ptx"
};

// The GPU the part was compiled on, when the source says; unknown fields are empty.
struct BuildGpu {
  std::optional<std::string> name;
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::string> driver_version;
};

struct CudaInfo {
  std::vector<KernelTarget> kernel_targets;  // sorted, distinct
  std::optional<BuildGpu> built_on;
  // A program without weights (its AOTInductor wrapper declares no
  // constants): its weights blob is empty by design, which verify otherwise
  // refuses. JSON "weights": "none".
  bool no_weights = false;
  // An AOTInductor library with its constants compiled in
  // (package_constants_in_so=True, PyTorch's default): the library copies
  // them to the GPU itself when its container is created, so the part has
  // no weights blob to load. JSON "weights": "library", with "constants":
  // the size and SHA-256 of the library's constants section
  // (_binary_constants_bin_start to _end), which the library's own hash
  // covers too; absent when the section could not be found.
  bool weights_in_library = false;
  struct LibraryConstants {
    uint64_t bytes = 0;
    std::string sha256;
  };
  std::optional<LibraryConstants> constants = std::nullopt;
  // The runtime the part's libraries need: "built-in" (they import only the
  // aoti_* shims and the CUDA runtime) or "LibTorch" (they name libtorch
  // among their dependencies, as link_libtorch=True compiles them); absent
  // where export did not record it.
  std::optional<std::string> runtime = std::nullopt;
};

// How one expected output is checked: tolerance.h's rule as export derived
// it (or --atol/--rtol), said in `rule`. A sampler's example gives inputs
// only: then compare_values is false, the test-case file holds no expected
// value for the output, and verify checks its dtype and shape against the
// method's signature and that every value is finite; `rule` says why.
struct ManifestOutputCheck {
  bool compare_values = true;  // JSON "compare": "values" or "dtype_shape_finite"
  double atol = 0;
  double rtol = 0;
  std::string rule;
};

struct ManifestTestcase {
  std::string path;  // part_file_path(name, Testcase)
  // Bundles written before output_checks: every output against these. With
  // output_checks: the largest of theirs, for people.
  double atol = 0;
  double rtol = 0;
  uint32_t inputs = 0;
  uint32_t outputs = 0;
  std::vector<ManifestOutputCheck> output_checks;  // empty, or one per output
};

struct ManifestSource {
  std::string kind;                // "executorch" or "aoti_package"
  std::vector<std::string> files;  // base names of the inputs, for people; never opened
};

struct ManifestPart {
  std::string name;
  ManifestSource source;
  std::vector<ManifestFile> files;
  std::optional<std::string> data_name;  // equals name when the part has a data file
  std::vector<ManifestMethod> methods;
  std::optional<CudaInfo> cuda;
  std::optional<ManifestTestcase> testcase;

  const ManifestFile* find_file(FileRole role) const;
};

// The bundle's tune file (tune_file.h), which `ptbundle tune` writes: listed
// with its digest so that verify and a signature cover it. JSON "tune":
// {"path": "tune.json", "size", "sha256"}, absent until a bundle is tuned.
struct ManifestTuneFile {
  std::string path;  // tune_file_path(g)
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string ptbundle_version;
  std::string created;  // UTC, "2026-05-01T12:34:56Z"
  std::vector<ManifestPart> parts;
  std::optional<ManifestTuneFile> tune;

  const ManifestPart* find_part(std::string_view name) const;
  ManifestPart* find_part(std::string_view name);
};

// Bounds on what is parsed: bundle.json lists files, not data, so 64 MiB is
// far beyond any real one.
inline constexpr uint64_t kMaxManifestBytes = 64ull << 20;

// bundle.json's text, checked whole; `name` prefixes errors. Its JSON form
// (for reports and tests) is in manifest_json.h.
Result<Manifest> parse_manifest(std::string_view text, const std::string& name);

class BundleDir;
// <bundle_dir>/bundle.json, opened with no symlink followed.
Result<Manifest> read_manifest(const std::string& bundle_dir);
Result<Manifest> read_manifest(const BundleDir& dir);
// Atomically (temporary file + rename), so a reader sees the old or the new manifest.
Status write_manifest(const std::string& bundle_dir, const Manifest& manifest);
Status write_manifest(const BundleDir& dir, const Manifest& manifest);

std::string utc_now_iso8601();

}  // namespace ptb
