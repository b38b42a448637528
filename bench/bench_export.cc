// How fast `ptbundle export` puts a part with a 4 GiB data file into a
// bundle, against its physical limit measured in the same run, and how much
// memory it needs. Export must copy the data file and prove its content (the
// file's SHA-256 for bundle.json, and the weights blob's, which its key
// names), so the limit is the slower of `cp` of the data file and one
// SHA-256 pass over it on one core (one file's digest is one sequential
// stream). Goal: within 1.3x of that limit, peak resident memory under 64 MiB.
//
// It makes its own input with ptbundle's writers in a temporary folder: a
// program with one CudaBackend delegate (single-blob payload, the real sm80
// library from ../shared/fixtures/cuda/so as named data) and a data file
// holding one weights blob of pseudo-random bytes (not sparse, so every copy
// moves real bytes), stored under its content address. Then it runs, each
// once as a fresh process (wall time and peak RSS from wait4): cp of the data
// file; cp followed by sync of the copy (export fsyncs every file before
// renaming it into place, so this is the copy with the same durability);
// SHA-256 of the data file in this process; then ptbundle export.
//
//   bench_export [--gib N] [--cli PATH] [--dir DIR] [--keep]
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/base/file.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/base/sha256.h"
#include "bench_util.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

// `bytes` pseudo-random bytes (xorshift), written 4 MiB at a time.
bool write_random_file(const fs::path& path, uint64_t bytes) {
  std::vector<uint64_t> buffer((4u << 20) / sizeof(uint64_t));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) return false;
  for (uint64_t done = 0; done < bytes;) {
    for (auto& word : buffer) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      word = state;
    }
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size() * sizeof(uint64_t), bytes - done));
    if (std::fwrite(buffer.data(), 1, n, out) != n) {
      std::fclose(out);
      return false;
    }
    done += n;
  }
  return std::fclose(out) == 0;
}

// The source part: model.pte (one CudaBackend delegate whose library is in
// the program) and aoti_cuda_blob.ptd (its weights blob).
bool make_source(const fs::path& work, const fs::path& library_path, uint64_t bytes) {
  auto raw = work / "weights.raw";
  if (!write_random_file(raw, bytes)) return false;
  auto raw_file = MappedFile::open(raw.string());
  auto library = MappedFile::open(library_path.string());
  if (!raw_file.ok() || !library.ok()) return false;

  CudaPayload payload;
  payload.form = CudaPayloadForm::SingleBlob;
  payload.so_key = to_hex(sha256(library->bytes())) + "_so_blob";
  auto weights_digest = sha256_file_range(*raw_file, 0, raw_file->size());
  if (!weights_digest.ok()) return false;
  payload.weights_key = *weights_digest + "_weights_blob";  // export checks that the bytes hash to it
  auto payload_bytes = encode_cuda_payload(payload);

  PtdContents data;
  data.add(payload.weights_key, SegmentSource::file_range(*raw_file, 0, raw_file->size()));
  if (!write_ptd_file((work / "src" / "aoti_cuda_blob.ptd").string(), data).ok()) return false;
  fs::remove(raw);

  fb::ProgramT program;
  auto plan = std::make_unique<fb::ExecutionPlanT>();
  plan->name = "forward";
  plan->container_meta_type = std::make_unique<fb::ContainerMetadataT>();
  auto delegate = std::make_unique<fb::BackendDelegateT>();
  delegate->id = "CudaBackend";
  delegate->processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
  delegate->processed->location = fb::DataLocation::SEGMENT;
  delegate->processed->index = 0;
  auto method_spec = std::make_unique<fb::CompileSpecT>();
  method_spec->key = "method_name";
  method_spec->value = {'f', 'o', 'r', 'w', 'a', 'r', 'd'};
  delegate->compile_specs.push_back(std::move(method_spec));
  plan->delegates.push_back(std::move(delegate));
  program.execution_plan.push_back(std::move(plan));
  auto named = std::make_unique<fb::NamedDataT>();
  named->key = payload.so_key;
  named->segment_index = 1;
  program.named_data.push_back(std::move(named));
  return write_pte_file((work / "src" / "model.pte").string(), program,
                        {SegmentSource::memory(payload_bytes), SegmentSource::file_range(*library, 0, library->size())})
      .ok();
}

}  // namespace

int main(int argc, char** argv) {
  const BenchOptions options = parse_bench_options(argc, argv, /*gib=*/4.0);
  if (!fs::exists(options.cli)) {
    std::printf("SKIPPED bench_export: no ptbundle binary at %s (pass --cli)\n", options.cli.c_str());
    return 0;
  }
  fs::path fixtures = find_fixtures();
  fs::path library = fixtures / "cuda" / "so" / "sm80.so";
  if (fixtures.empty() || !fs::exists(library)) {
    std::printf("SKIPPED bench_export: ../shared/fixtures/cuda/so/sm80.so not found (set PTB_FIXTURES)\n");
    return 0;
  }
  auto bytes = static_cast<uint64_t>(options.gib * (1ull << 30));
  // The source, cp's copy and the bundle's copy, plus the raw blob while the source is made.
  uint64_t needed = 3 * bytes + (256ull << 20);
  struct statvfs disk {};
  ::statvfs(options.dir.c_str(), &disk);
  uint64_t free_bytes = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
  if (free_bytes < needed) {
    std::printf("SKIPPED bench_export: %s has %.1f GiB free; the benchmark needs %.1f GiB (pass --dir or --gib)\n",
                options.dir.c_str(), static_cast<double>(free_bytes) / (1ull << 30),
                static_cast<double>(needed) / (1ull << 30));
    return 0;
  }

  fs::path work = fs::path(options.dir) / ("ptbundle-bench-export-" + std::to_string(::getpid()));
  fs::create_directories(work / "src");
  std::printf("making a part with a %.2f GiB data file in %s ...\n", options.gib, work.c_str());
  std::fflush(stdout);
  if (!make_source(work, library, bytes)) {
    std::printf("FAILED bench_export: could not write the source part in %s\n", work.c_str());
    fs::remove_all(work);
    return 1;
  }
  auto data_size = fs::file_size(work / "src" / "aoti_cuda_blob.ptd");

  // Both copies read a source the page cache already holds (it was just written).
  ChildRun cp = run_child({"cp", (work / "src" / "aoti_cuda_blob.ptd").string(), (work / "cp.ptd").string()});
  fs::remove(work / "cp.ptd");
  std::string durable = "cp '" + (work / "src" / "aoti_cuda_blob.ptd").string() + "' '" + (work / "cp.ptd").string() +
                        "' && sync '" + (work / "cp.ptd").string() + "'";
  ChildRun cp_sync = run_child({"sh", "-c", durable});
  fs::remove(work / "cp.ptd");
  auto hash_start = std::chrono::steady_clock::now();
  auto hashed = sha256_file((work / "src" / "aoti_cuda_blob.ptd").string());
  const double hash_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - hash_start).count();
  if (!hashed.ok()) fail(hashed.error().message);
  ChildRun exported = run_child({options.cli, "export", "-o", (work / "bundle").string(), "--part",
                                  "encoder=" + (work / "src" / "model.pte").string()});
  bool same_size = fs::exists(work / "bundle" / "encoder.ptd") && fs::file_size(work / "bundle" / "encoder.ptd") == data_size;
  if (options.keep) {
    fs::remove_all(work / "bundle");
    std::printf("kept the source part in %s\n", (work / "src").c_str());
  } else {
    fs::remove_all(work);
  }

  if (cp.status != 0 || cp_sync.status != 0 || exported.status != 0 || !same_size) {
    std::printf("FAILED bench_export: cp exit %d, ptbundle export exit %d, copy %s\n", cp.status, exported.status,
                same_size ? "complete" : "incomplete");
    return 1;
  }
  const double limit = std::max(cp.seconds, hash_seconds);
  double ratio = exported.seconds / limit;
  double peak_mib = static_cast<double>(exported.peak_kib) / 1024.0;
  std::printf("data file          %.2f GiB\n", static_cast<double>(data_size) / (1ull << 30));
  std::printf("cp                 %.2f s  (%.0f MiB/s), peak %.1f MiB\n", cp.seconds,
              static_cast<double>(data_size) / (1 << 20) / cp.seconds, static_cast<double>(cp.peak_kib) / 1024.0);
  std::printf("cp + sync          %.2f s  (%.0f MiB/s)\n", cp_sync.seconds,
              static_cast<double>(data_size) / (1 << 20) / cp_sync.seconds);
  std::printf("sha256, one core   %.2f s  (%.0f MiB/s)\n", hash_seconds,
              static_cast<double>(data_size) / (1 << 20) / hash_seconds);
  std::printf("ptbundle export    %.2f s  (%.0f MiB/s), peak %.1f MiB\n", exported.seconds,
              static_cast<double>(data_size) / (1 << 20) / exported.seconds, peak_mib);
  std::printf("limit              %.2f s  (the slower of cp and sha256)\n", limit);
  std::printf("export / limit     %.2fx  (goal <= 1.30x)%s\n", ratio, ratio <= 1.3 ? "" : "  MISSED");
  std::printf("export / cp        %.2fx\n", exported.seconds / cp.seconds);
  std::printf("export / cp+sync   %.2fx\n", exported.seconds / cp_sync.seconds);
  std::printf("peak memory        %.1f MiB (goal < 64 MiB)%s\n", peak_mib, peak_mib < 64 ? "" : "  MISSED");
  return 0;
}
