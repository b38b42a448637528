// ptbundle push and pull through a local docker-registry (the CNCF
// distribution registry Debian ships), against two baselines moving the same
// files to and from the same registry in the same run:
//   skopeo copy   an OCI layout holding the bundle's files as its blobs, copied
//                 to a fresh repository (push), and from it to a fresh layout
//                 (pull): a real registry client doing the same work (into a
//                 registry of its own each run, so that its blob-info cache
//                 cannot turn the upload into a mount)
//   curl          each file as one monolithic upload (POST, then PUT
//                 ?digest=), and each blob fetched with GET: the bytes moved
//                 with no client logic at all
// Also the time and the upload count of a re-push of the unchanged bundle,
// and ptbundle's peak RSS (the files are never held in memory).
//
// The bundle is one part made with `ptbundle export` from ExecuTorch's
// named_sm90 export whose data file gets one weights blob of --gib GiB of
// random bytes under its content address (as bench_sign makes it). Times are
// medians of --runs runs, each into a fresh repository or folder.
//
//   bench_registry [--gib N] [--runs N] [--cli PATH] [--dir DIR] [--keep]
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_bundles.h"
#include "bench_util.h"
#include "registry/local_registry.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;
using ptb::test::LocalRegistry;

namespace {

std::unique_ptr<LocalRegistry> start_registry(const fs::path& dir) {
  try {
    return std::make_unique<LocalRegistry>(dir);
  } catch (const std::exception& error) {
    fail(error.what());
  }
}

struct BlobFile {
  std::string path;  // in the bundle
  std::string digest;
  uint64_t size = 0;
};

// An OCI layout whose blobs are the bundle's files (hard links), for skopeo.
void write_layout(const fs::path& layout, const fs::path& bundle, const std::vector<BlobFile>& files) {
  fs::create_directories(layout / "blobs/sha256");
  std::string layers;
  for (const auto& f : files) {
    const fs::path blob = layout / "blobs/sha256" / f.digest.substr(7);
    if (!fs::exists(blob)) fs::create_hard_link(bundle / f.path, blob);
    layers += std::string(layers.empty() ? "" : ",") + R"({"mediaType":"application/vnd.cncf.model.weight.v1.raw","digest":")" +
              f.digest + R"(","size":)" + std::to_string(f.size) + R"(,"annotations":{"org.cncf.model.filepath":")" + f.path + "\"}}";
  }
  const std::string config = R"({"descriptor":{"name":"bench"},"modelfs":{"type":"layers","diffIds":[]},"config":{}})";
  auto put = [&](const std::string& text) {
    const std::string digest = to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
    std::ofstream(layout / "blobs/sha256" / digest, std::ios::binary) << text;
    return digest;
  };
  const std::string config_digest = put(config);
  const std::string manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.cncf.model.manifest.v1+json","config":{"mediaType":"application/vnd.cncf.model.config.v1+json","digest":"sha256:)" +
                               config_digest + R"(","size":)" + std::to_string(config.size()) + R"(},"layers":[)" + layers + "]}";
  const std::string manifest_digest = put(manifest);
  std::ofstream(layout / "oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
  std::ofstream(layout / "index.json") << R"({"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" +
                                              manifest_digest + R"(","size":)" + std::to_string(manifest.size()) +
                                              R"(,"annotations":{"org.opencontainers.image.ref.name":"1"}}]})";
}

double run_seconds(const std::vector<std::string>& argv, long* peak_kib = nullptr) {
  ChildRun run = run_child(argv);
  if (run.status != 0) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    fail("failed: " + line);
  }
  if (peak_kib) *peak_kib = std::max(*peak_kib, run.peak_kib);
  return run.seconds;
}

// curl: every file uploaded monolithically, as a shell pipeline per file.
double curl_push(const std::string& base, const std::string& repo, const fs::path& bundle, const std::vector<BlobFile>& files) {
  std::string script = "set -e\n";
  for (const auto& f : files) {
    script += "loc=$(curl -sf -X POST -D - -o /dev/null '" + base + "/v2/" + repo +
              "/blobs/uploads/' | tr -d '\\r' | sed -n 's/^[Ll]ocation: //p')\n";
    script += "case $loc in http*) ;; *) loc='" + base + "'$loc ;; esac\n";
    script += "curl -sf -o /dev/null -H 'Content-Type: application/octet-stream' -T '" + (bundle / f.path).string() +
              "' \"$loc&digest=" + f.digest + "\"\n";
  }
  return run_seconds({"bash", "-c", script});
}

double curl_pull(const std::string& base, const std::string& repo, const fs::path& out, const std::vector<BlobFile>& files) {
  std::string script = "set -e\nmkdir -p '" + out.string() + "'\n";
  for (size_t i = 0; i < files.size(); ++i)
    script += "curl -sf -o '" + (out / std::to_string(i)).string() + "' '" + base + "/v2/" + repo + "/blobs/" + files[i].digest + "'\n";
  return run_seconds({"bash", "-c", script});
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options = parse_bench_options(argc, argv, 2.0, 3, 1);
  const fs::path fixtures = find_fixtures();
  if (fixtures.empty()) fail("the fixtures are needed (../shared/fixtures or PTB_FIXTURES)");
  const fs::path work = fs::path(options.dir) / ("ptb-bench-registry-" + std::to_string(::getpid()));
  RemoveOnExit cleanup{work, options.keep};
  fs::create_directories(work);
  const uint64_t blob = static_cast<uint64_t>(options.gib * (1ull << 30));
  write_named_sm90_data(fixtures, work / "data.ptd", blob);
  const fs::path bundle = work / "bundle";
  run_seconds({options.cli, "export", "-o", bundle.string(), "--part",
               "part0=" + (fixtures / "cuda/named_sm90/model.pte").string() + "," + (work / "data.ptd").string()});
  fs::remove(work / "data.ptd");
  const Manifest manifest = need(read_manifest(bundle.string()));
  std::vector<BlobFile> files;
  for (const auto& part : manifest.parts)
    for (const auto& f : part.files) files.push_back({f.path, "sha256:" + f.sha256, f.size});
  {
    const std::string json = need(sha256_file((bundle / "bundle.json").string()));
    files.push_back({"bundle.json", "sha256:" + json, fs::file_size(bundle / "bundle.json")});
  }
  uint64_t total = 0;
  for (const auto& f : files) total += f.size;

  auto registry = start_registry(work);
  const std::string host = registry->host();
  const std::string base = "http://" + host;
  write_layout(work / "layout", bundle, files);

  std::vector<double> ptb_push, skopeo_push, curl_up, ptb_pull, skopeo_pull, curl_down, repush;
  long push_kib = 0, pull_kib = 0;
  std::string last_ptb_repo;
  for (int run = 0; run < options.runs; ++run) {
    const std::string r = std::to_string(run);
    last_ptb_repo = "bench/ptb" + r;
    ptb_push.push_back(run_seconds({options.cli, "push", "-q", bundle.string(), host + "/" + last_ptb_repo + ":1"}, &push_kib));
    // skopeo remembers where it pushed each blob (its blob-info cache, per
    // registry host) and mounts it from there: a registry of its own each run
    // makes it send the bytes.
    fs::create_directories(work / ("skopeo-registry" + r));
    auto own = start_registry(work / ("skopeo-registry" + r));
    const std::string skopeo_host = own->host();
    skopeo_push.push_back(run_seconds({"skopeo", "copy", "-q", "--dest-tls-verify=false",
                                       "oci:" + (work / "layout").string() + ":1", "docker://" + skopeo_host + "/bench/skopeo:1"}));
    curl_up.push_back(curl_push(base, "bench/curl" + r, bundle, files));
    repush.push_back(run_seconds({options.cli, "push", "-q", bundle.string(), host + "/" + last_ptb_repo + ":1"}));

    const fs::path pulled = work / ("pulled" + r), layout_out = work / ("layout_out" + r), curl_out = work / ("curl_out" + r);
    ptb_pull.push_back(run_seconds({options.cli, "pull", "-q", "--gpu", "none", host + "/" + last_ptb_repo + ":1", "-o", pulled.string()}, &pull_kib));
    skopeo_pull.push_back(run_seconds({"skopeo", "copy", "-q", "--src-tls-verify=false", "docker://" + skopeo_host + "/bench/skopeo:1",
                                       "oci:" + layout_out.string() + ":1"}));
    curl_down.push_back(curl_pull(base, last_ptb_repo, curl_out, files));
    std::error_code ec;
    fs::remove_all(pulled, ec);
    fs::remove_all(layout_out, ec);
    fs::remove_all(curl_out, ec);
  }
  // How many blobs the re-push sent, from its report.
  const std::string count_cmd = options.cli + " push --json -q " + bundle.string() + " " + host + "/" + last_ptb_repo +
                                ":1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"uploaded\"], d[\"uploaded_bytes\"])'";
  std::FILE* pipe = ::popen(count_cmd.c_str(), "r");
  char counted[64] = {0};
  if (pipe) {
    if (!std::fgets(counted, sizeof counted, pipe)) counted[0] = 0;
    ::pclose(pipe);
  }

  const double mib = static_cast<double>(total) / (1 << 20);
  std::printf("bench_registry: %.0f MiB in %zu files, localhost docker-registry, medians of %d runs\n", mib, files.size(), options.runs);
  std::printf("%-6s %10s %10s %10s %14s %12s\n", "", "ptbundle", "skopeo", "curl", "ptb/skopeo", "ptb/curl");
  auto row = [](const char* name, double p, double s, double c) {
    std::printf("%-6s %9.2fs %9.2fs %9.2fs %13.2fx %11.2fx\n", name, p, s, c, p / s, p / c);
  };
  row("push", median(ptb_push), median(skopeo_push), median(curl_up));
  row("pull", median(ptb_pull), median(skopeo_pull), median(curl_down));
  std::printf("re-push of the unchanged bundle: %.2fs, uploaded (blobs, bytes): %s", median(repush), counted[0] ? counted : "?\n");
  std::printf("ptbundle peak RSS: push %.1f MiB, pull %.1f MiB\n", static_cast<double>(push_kib) / 1024, static_cast<double>(pull_kib) / 1024);
  std::printf("goals: push and pull within 1.3x of skopeo and 1.5x of curl; re-push uploads nothing\n");
  return 0;
}
