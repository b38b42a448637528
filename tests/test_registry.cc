// ptbundle push and pull against real components and a lying one: Debian's
// docker-registry (the CNCF distribution registry) started on 127.0.0.1 with
// a free port and its own storage; skopeo as an independent client; and
// tests/registry/hostile_registry.py, a registry that misbehaves one way at a
// time. Without docker-registry or skopeo the tests that need them skip (in
// CI, where scripts/install-deps --test installs them, they fail instead).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "ptbundle/bundle/transaction.h"
#include "ptbundle/bundle/tune_file.h"
#include "ptbundle/registry/modelpack.h"
#include "ptbundle/registry/reference.h"
#include "registry/local_registry.h"
#include "cli_child.h"
#include "support.h"

extern char** environ;

using ptb::test::contains;
using ptb::test::fixture;
using ptb::test::quote;
using ptb::test::read_bytes;
using ptb::test::run_cli;
using ptb::test::schema_problem;
using ptb::test::TempDir;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

bool have_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// Missing tools skip the test, except in CI, where they are installed.
bool require_programs(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (have_program(name)) continue;
    const std::string why = std::string(name) + " not installed (scripts/install-deps --test installs it)";
    if (std::getenv("CI")) FAIL(why);
    ptb::test::skip(why);
    return false;
  }
  return true;
}

using ptb::test::ServerChild;

// docker-registry in a temporary folder of its own.
struct LocalRegistry {
  TempDir dir;
  ptb::test::LocalRegistry server{dir.path()};
  std::string host() const { return server.host(); }
};

struct HostileRegistry {
  TempDir dir;
  std::unique_ptr<ServerChild> child;
  int port = 0;
  HostileRegistry(const fs::path& bundle, const std::string& mode) {
    const fs::path port_file = dir / "port";
    child = std::make_unique<ServerChild>(std::vector<std::string>{"python3", PTB_SOURCE_DIR "/tests/registry/hostile_registry.py",
                                                             bundle.string(), mode, port_file.string(), "60"},
                                    dir / "log");
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE_MESSAGE(fs::exists(port_file), (std::string("hostile_registry.py did not start: ") + ptb::test::read_text(dir / "log")));
    port = std::stoi(ptb::test::read_text(port_file));
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(port); }
  fs::path auth_record() const { return dir / "port.auth"; }
};

// Environment variables set for the test's CLI runs, restored after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct Keys {
  TempDir dir;
  fs::path key = dir / "key.pem", pub = dir / "pub.pem";
  Keys() {
    REQUIRE(std::system(("openssl ecparam -name prime256v1 -genkey -noout -out " + quote(key) + " 2>/dev/null && openssl pkey -in " +
                         quote(key) + " -pubout -out " + quote(pub) + " 2>/dev/null")
                            .c_str()) == 0);
  }
};

// Two parts: "encoder" (a CUDA program with its data file) and "add".
void make_bundle(const fs::path& bundle) {
  auto exported = run_cli("export -o " + quote(bundle) + " --part encoder=" + quote(fixture("cuda/named_sm90/model.pte")) + "," +
                          quote(fixture("cuda/named_sm90/encoder.ptd")) + " --part add=" + quote(fixture("executorch/add.pte")));
  REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
}

// Part "add" of `bundle` replaced by another program.
void replace_add(const fs::path& bundle) {
  auto exported = run_cli("export --force -o " + quote(bundle) + " --part add=" + quote(fixture("executorch/softmax.pte")));
  REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
}

void sign(const fs::path& bundle, const Keys& keys) {
  auto signed_ = run_cli("sign " + quote(bundle) + " --key " + quote(keys.key));
  REQUIRE_MESSAGE(signed_.exit_code == 0, signed_.err);
}

Json json_of(const std::string& text) {
  Json out = Json::parse(text, nullptr, false);
  REQUIRE_MESSAGE(!out.is_discarded(), text);
  return out;
}

// The regular files under `dir`, relative, sorted.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (!entry.is_directory()) out.push_back(fs::relative(entry.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

void check_schema(const std::string& schema, const std::string& document) {
  if (!ptb::test::have_jsonschema()) return;
  const std::string problem = schema_problem(schema, document);
  CHECK_MESSAGE(problem.empty(), problem);
}

}  // namespace

TEST_CASE("registry: references name their registry, repository, tag and digest") {
  auto ref = ptb::parse_reference("localhost:5000/robots/arm:v3");
  REQUIRE(ref.ok());
  CHECK(ref->registry == "localhost:5000");
  CHECK(ref->repository == "robots/arm");
  CHECK(*ref->tag == "v3");
  CHECK(ptb::is_loopback_registry(ref->registry));
  auto latest = ptb::parse_reference("ghcr.io/a/b");
  REQUIRE(latest.ok());
  CHECK(*latest->tag == "latest");
  CHECK(!ptb::is_loopback_registry(latest->registry));
  const std::string digest = "sha256:" + std::string(64, 'a');
  auto pinned = ptb::parse_reference("r.example.com:443/x@" + digest);
  REQUIRE(pinned.ok());
  CHECK(pinned->manifest_name() == digest);
  for (const char* bad : {"robots/arm:v3", "arm", "r.io/UPPER:v1", "r.io/a//b", "r.io/a:-tag", "r.io/a@sha256:abc",
                          "r.io/../a", "r.io/a b"}) {
    auto refused = ptb::parse_reference(bad);
    CHECK_MESSAGE(!refused.ok(), bad);
    if (!refused.ok()) CHECK(refused.error().kind == ptb::ErrorKind::Usage);
  }
}

TEST_CASE("registry: a manifest's layers are checked for form before anything is fetched") {
  const std::string d = "sha256:" + std::string(64, 'b');
  auto manifest = [&](const std::string& path, const std::string& digest = "", const std::string& extra = "") {
    return R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"x","digest":")" +
           d + R"(","size":2},"layers":[{"mediaType":"m","digest":")" + (digest.empty() ? d : digest) +
           R"(","size":3,"annotations":{"org.cncf.model.filepath":")" + path + R"("}})" + extra + "]}";
  };
  CHECK(ptb::parse_artifact_manifest(manifest("enc.pte"), "m").ok());
  CHECK(ptb::parse_artifact_manifest(manifest("testcases/enc.ptd"), "m").ok());
  for (const char* path : {"../enc.pte", "/etc/passwd", "a/../../b", "./x", "a//b", "a\\\\b", ""}) {
    auto refused = ptb::parse_artifact_manifest(manifest(path), "m");
    REQUIRE_MESSAGE(!refused.ok(), path);
    CHECK(contains(refused.error().message, "org.cncf.model.filepath"));
  }
  CHECK(!ptb::parse_artifact_manifest(manifest("a", "sha512:00"), "m").ok());
  auto twice = ptb::parse_artifact_manifest(
      manifest("a", "", R"(,{"mediaType":"m","digest":")" + d + R"(","size":3,"annotations":{"org.cncf.model.filepath":"a"}})"), "m");
  REQUIRE(!twice.ok());
  CHECK(contains(twice.error().message, "second layer"));
  auto index = ptb::parse_artifact_manifest(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json"})", "m");
  REQUIRE(!index.ok());
  CHECK(contains(index.error().message, "index"));
}

TEST_CASE("registry: push then pull through docker-registry gives a bundle that verifies with its signature") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"docker-registry", "openssl"})) return;
  LocalRegistry registry;
  Keys keys;
  TempDir work;
  const fs::path bundle = work / "robot_model";
  make_bundle(bundle);
  // Tuned before signing: the tune file travels as a layer of its own.
  ptb::TuneFile tuned;
  tuned.gpus.push_back({"NVIDIA H100 80GB HBM3", "sm_90", "built-in", "2026-01-01T00:00:00Z",
                        {{"gemm", "m=32 n=4 k=16", "algo=" + std::string(128, '0'), 130100}}});
  auto tune_written = ptb::write_bundle_tune_file(bundle.string(), tuned, "test");
  REQUIRE_MESSAGE(tune_written.ok(), tune_written.error().message);
  sign(bundle, keys);
  const std::string ref = registry.host() + "/robots/arm:v1";

  auto pushed = run_cli("push --json --key " + quote(keys.pub) + " " + quote(bundle) + " " + ref);
  REQUIRE_MESSAGE(pushed.exit_code == 0, (pushed.err + pushed.out));
  check_schema("push", pushed.out);
  Json report = json_of(pushed.out);
  CHECK(report["signed_by"].is_string());
  // config, bundle.json, encoder.pte, encoder.ptd, add.pte, bundle.sig (and test cases, if any)
  CHECK(report["uploaded"].get<int>() == static_cast<int>(report["blobs"].size()));
  CHECK(report["existing"] == 0);

  const fs::path out = work / "pulled";
  auto pulled = run_cli("pull --json --gpu none --key " + quote(keys.pub) + " --require-signature " + ref + " -o " + quote(out));
  REQUIRE_MESSAGE(pulled.exit_code == 0, (pulled.err + pulled.out));
  check_schema("pull", pulled.out);
  Json pull_report = json_of(pulled.out);
  CHECK(pull_report["verify"]["ok"] == true);
  CHECK(pull_report["digest"] == report["digest"]);
  CHECK(pull_report["signed_by"] == report["signed_by"]);
  // The same files, byte for byte, and nothing else.
  CHECK(files_under(out) == files_under(bundle));
  for (const auto& name : files_under(bundle)) CHECK_MESSAGE(read_bytes(bundle / name) == read_bytes(out / name), name);
  auto verified = run_cli("verify --gpu none --require-signature --key " + quote(keys.pub) + " " + quote(out));
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));

  // Pinned by digest: the same artifact; a wrong digest is refused.
  const std::string digest = report["digest"];
  auto by_digest = run_cli("pull -q --gpu none " + registry.host() + "/robots/arm@" + digest + " -o " + quote(work / "by_digest"));
  CHECK_MESSAGE(by_digest.exit_code == 0, by_digest.err);
  auto unknown = run_cli("pull --json --gpu none " + registry.host() + "/robots/arm@sha256:" + std::string(64, '0') + " -o " +
                         quote(work / "unknown"));
  CHECK(unknown.exit_code != 0);
  CHECK(contains(unknown.err, "MANIFEST_UNKNOWN"));
  check_schema("pull", unknown.out);
  CHECK(!fs::exists(work / "unknown"));

  // A second pull keeps what is there; --part fetches one part's files.
  auto again = run_cli("pull --json --gpu none " + ref + " -o " + quote(out));
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  Json again_report = json_of(again.out);
  CHECK(again_report["kept"].get<int>() >= 3);
  for (const auto& file : again_report["files"])
    if (file["path"] != "bundle.json" && file["path"] != "bundle.sig") CHECK(file["action"] == "kept");
  auto part = run_cli("pull --json --part add --key " + quote(keys.pub) + " " + ref + " -o " + quote(work / "one_part"));
  REQUIRE_MESSAGE(part.exit_code == 0, part.err);
  check_schema("pull", part.out);
  CHECK(files_under(work / "one_part") == std::vector<std::string>{"add.pte", "bundle.json", "bundle.sig", "tune.json"});
  CHECK(json_of(part.out)["verify"].is_null());

  // A bundle changed after signing is not pushed with --key.
  ptb::test::flip_byte(bundle / "add.pte", 100);
  auto refused = run_cli("push --key " + quote(keys.pub) + " " + quote(bundle) + " " + registry.host() + "/robots/arm:bad");
  CHECK(refused.exit_code == 1);
  CHECK(contains(refused.err, "not pushed"));
}

TEST_CASE("registry: a re-push uploads nothing, and a changed part re-pushes only its files") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"docker-registry"})) return;
  LocalRegistry registry;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  auto first = run_cli("push --json " + quote(bundle) + " " + registry.host() + "/fleet/m:1");
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  auto second = run_cli("push --json " + quote(bundle) + " " + registry.host() + "/fleet/m:1");
  REQUIRE_MESSAGE(second.exit_code == 0, second.err);
  Json again = json_of(second.out);
  CHECK(again["uploaded"] == 0);
  CHECK(again["uploaded_bytes"] == 0);
  CHECK(again["digest"] == json_of(first.out)["digest"]);

  // Part "add" replaced by another program: only its file, bundle.json and the config change.
  replace_add(bundle);
  auto changed = run_cli("push --json " + quote(bundle) + " " + registry.host() + "/fleet/m:2");
  REQUIRE_MESSAGE(changed.exit_code == 0, changed.err);
  Json report = json_of(changed.out);
  std::set<std::string> uploaded;
  for (const auto& blob : report["blobs"])
    if (blob["action"] == "uploaded") uploaded.insert(blob["path"].get<std::string>());
  for (const auto& path : uploaded)
    CHECK_MESSAGE((path == "(config)" || path == "bundle.json" || path.starts_with("add")), path);
  CHECK(uploaded.count("bundle.json"));
  CHECK(std::any_of(uploaded.begin(), uploaded.end(), [](const std::string& p) { return p.starts_with("add"); }));

  // Mounted from another repository instead of uploaded.
  auto mounted = run_cli("push --json --mount-from fleet/m " + quote(bundle) + " " + registry.host() + "/fleet/other:1");
  REQUIRE_MESSAGE(mounted.exit_code == 0, mounted.err);
  // Every file is mounted; the config names the repository, so it is new.
  const auto mounted_report = json_of(mounted.out);  // kept: the loop reads into it
  for (const auto& blob : mounted_report["blobs"])
    CHECK_MESSAGE(blob["action"] == (blob["path"] == "(config)" ? "uploaded" : "mounted"), blob.dump());

  // Chunked: blobs over 1 MiB go up in 1-MiB PATCHes, and pull back whole.
  auto chunked = run_cli("push --json --chunk-size 1 " + quote(bundle) + " " + registry.host() + "/fleet/chunked:1");
  REQUIRE_MESSAGE(chunked.exit_code == 0, chunked.err);
  auto back = run_cli("pull --gpu none " + registry.host() + "/fleet/chunked:1 -o " + quote(work / "back"));
  CHECK_MESSAGE(back.exit_code == 0, (back.err + back.out));
  for (const auto& name : files_under(bundle)) CHECK_MESSAGE(read_bytes(bundle / name) == read_bytes(work / "back" / name), name);
}

TEST_CASE("registry: skopeo reads what we push, and a copy through an OCI layout stays pullable") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"docker-registry", "skopeo"})) return;
  LocalRegistry registry;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  const std::string ref = registry.host() + "/robots/arm:v1";
  auto pushed = run_cli("push --json " + quote(bundle) + " " + ref);
  REQUIRE_MESSAGE(pushed.exit_code == 0, pushed.err);

  const std::string raw = "skopeo inspect --raw --tls-verify=false docker://" + ref + " > " + quote(work / "raw.json") + " 2>" +
                          quote(work / "err");
  REQUIRE_MESSAGE(std::system(raw.c_str()) == 0, ptb::test::read_text(work / "err"));
  Json manifest = json_of(ptb::test::read_text(work / "raw.json"));
  CHECK(manifest["artifactType"] == ptb::kModelPackArtifactType);
  CHECK(manifest["config"]["mediaType"] == ptb::kModelPackConfigMediaType);
  CHECK(manifest["layers"][0]["annotations"][ptb::kModelPackFilepath] == "bundle.json");

  const std::string layout = (work / "layout").string();
  const std::string copy_out = "skopeo copy -q --src-tls-verify=false docker://" + ref + " oci:" + layout + ":v1 2>" + quote(work / "err");
  REQUIRE_MESSAGE(std::system(copy_out.c_str()) == 0, ptb::test::read_text(work / "err"));
  const std::string copy_back = "skopeo copy -q --dest-tls-verify=false oci:" + layout + ":v1 docker://" + registry.host() +
                                "/robots/copied:v1 2>" + quote(work / "err");
  REQUIRE_MESSAGE(std::system(copy_back.c_str()) == 0, ptb::test::read_text(work / "err"));
  auto pulled = run_cli("pull --gpu none " + registry.host() + "/robots/copied:v1 -o " + quote(work / "out"));
  CHECK_MESSAGE(pulled.exit_code == 0, (pulled.err + pulled.out));
  CHECK(files_under(work / "out") == files_under(bundle));
}

TEST_CASE("registry: a ModelPack artifact another tool wrote is accepted as a bundle or refused, saying why") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"docker-registry", "skopeo"})) return;
  LocalRegistry registry;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  auto copy_in = [&](const fs::path& folder, const std::string& repo, const std::string& extra = "") {
    const fs::path layout = work / ("layout-" + repo);
    const std::string write = "python3 " + quote(fs::path(PTB_SOURCE_DIR) / "tests/registry/write_layout.py") + " " + quote(layout) +
                              " v1 " + quote(folder) + " " + extra;
    REQUIRE(std::system(write.c_str()) == 0);
    const std::string copy = "skopeo copy -q --dest-tls-verify=false oci:" + layout.string() + ":v1 docker://" + registry.host() +
                             "/" + repo + ":v1 2>" + quote(work / "err");
    REQUIRE_MESSAGE(std::system(copy.c_str()) == 0, ptb::test::read_text(work / "err"));
  };
  // A bundle folder packed by the script (bundle.json as a weight config): accepted.
  copy_in(bundle, "theirs");
  auto accepted = run_cli("pull --gpu none " + registry.host() + "/theirs:v1 -o " + quote(work / "theirs"));
  CHECK_MESSAGE(accepted.exit_code == 0, (accepted.err + accepted.out));
  CHECK(files_under(work / "theirs") == files_under(bundle));

  // A model of safetensors and a config.json: not a bundle.
  TempDir model;
  std::ofstream(model / "model.safetensors") << std::string(1000, 'w');
  std::ofstream(model / "config.json") << "{}";
  copy_in(model.path(), "llm");
  auto refused = run_cli("pull --json --gpu none " + registry.host() + "/llm:v1 -o " + quote(work / "llm"));
  CHECK(refused.exit_code == 1);
  CHECK(contains(refused.err, "without bundle.json"));
  check_schema("pull", refused.out);
  CHECK(!fs::exists(work / "llm"));

  // bundle.json under an unknown media type: refused, naming it.
  copy_in(bundle, "odd", "--bundle-json-type application/x-odd");
  auto odd = run_cli("pull --gpu none " + registry.host() + "/odd:v1 -o " + quote(work / "odd"));
  CHECK(odd.exit_code == 1);
  CHECK(contains(odd.err, "application/x-odd"));
}

TEST_CASE("registry: a hostile registry is refused without writing outside DIR") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"python3"})) return;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  TempDir config;
  ScopedEnv docker_config("DOCKER_CONFIG", config.path().string());
  ScopedEnv low_speed("PTBUNDLE_REGISTRY_STALL_SECONDS", "2");
  ScopedEnv backoff("PTBUNDLE_REGISTRY_BACKOFF_MS", "20");
  ScopedEnv retries("PTBUNDLE_REGISTRY_RETRIES", "3");
  struct Case {
    const char* mode;
    const char* expected;  // in the error; empty: the pull succeeds
  };
  const Case cases[] = {
      {"ok", ""},
      {"wrong_digest", "hash to"},
      {"truncated", "truncated"},
      {"long", "more than"},
      {"dotdot", "leads out of the bundle folder"},
      {"absolute", "leads out of the bundle folder"},
      {"many_layers", "at most 4 MiB"},
      {"manifest_redirect", "redirected"},
      {"blob_redirect", ""},
      {"bearer", ""},
      {"slow_drip", "stalled"},
      {"errors", "MANIFEST_UNKNOWN: manifest unknown; NAME_UNKNOWN: repository name not known"},
      {"flaky", ""},
  };
  for (const Case& c : cases) {
    const std::string mode = c.mode;
    CAPTURE(mode);
    HostileRegistry hostile(bundle, c.mode);
    // Credentials for the registry's own host, which the Basic and Bearer modes ask for.
    std::ofstream(config / "config.json") << R"({"auths": {")" << hostile.host() << R"(": {"auth": "dXNlcjpzZWNyZXQ="}}})";
    TempDir parent;
    const fs::path out = parent / "out";
    auto pulled = run_cli("pull --json --gpu none " + hostile.host() + "/x/y:1 -o " + quote(out));
    check_schema("pull", pulled.out);
    if (std::string(c.expected).empty()) {
      CHECK_MESSAGE(pulled.exit_code == 0, pulled.err);
      CHECK(files_under(out) == files_under(bundle));
    } else {
      CHECK(pulled.exit_code != 0);
      CHECK_MESSAGE(contains(pulled.err, c.expected), pulled.err);
      CHECK(!fs::exists(out));  // nothing placed, no temporary file, no folder left
    }
    // Nothing beside DIR, nothing at the absolute path.
    for (const auto& entry : fs::directory_iterator(parent.path())) CHECK(entry.path().filename() == "out");
    CHECK(!fs::exists("/tmp/ptbundle-hostile-absolute.ptd"));
    if (std::string(c.mode) == "blob_redirect") CHECK(ptb::test::read_text(hostile.auth_record()) == "absent");
  }
}

TEST_CASE("registry: credentials come from a credential helper") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"python3"})) return;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  HostileRegistry hostile(bundle, "bearer");
  TempDir bin;
  {
    std::ofstream helper(bin / "docker-credential-ptbtest");
    helper << "#!/bin/sh\nread host\n[ \"$1\" = get ] && [ \"$host\" = \"" << hostile.host()
           << "\" ] && echo '{\"ServerURL\":\"'$host'\",\"Username\":\"user\",\"Secret\":\"secret\"}' && exit 0\n"
              "echo 'credentials not found in native keychain'; exit 1\n";
  }
  fs::permissions(bin / "docker-credential-ptbtest", fs::perms::owner_all);
  TempDir config;
  std::ofstream(config / "config.json") << R"({"credHelpers": {")" << hostile.host() << R"(": "ptbtest"}})";
  ScopedEnv docker_config("DOCKER_CONFIG", config.path().string());
  ScopedEnv path("PATH", bin.path().string() + ":" + std::getenv("PATH"));
  auto pulled = run_cli("pull --gpu none " + hostile.host() + "/x/y:1 -o " + quote(work / "out"));
  CHECK_MESSAGE(pulled.exit_code == 0, pulled.err);

  // No credentials: the 401 is explained.
  std::ofstream(config / "config.json") << "{}";
  auto refused = run_cli("pull --gpu none " + hostile.host() + "/x/y:1 -o " + quote(work / "none"));
  CHECK(refused.exit_code == 3);
  CHECK(contains(refused.err, "HTTP 401"));
}

// pull's verify takes the digests pull checked as the bytes arrived, for the
// files it wrote and holds (a write lease while it writes them, then a read
// lease: AtomicOutput::finish). A file changed in DIR after that must still
// fail verify: renamed over (another file: hashed), or written in place
// (which the lease holds off while pull runs, or, on a file system without
// leases, leaves no proof: hashed).
TEST_CASE("registry: a layer changed in DIR between pull's hashing and its verify cannot pass") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"docker-registry"})) return;
  LocalRegistry registry;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  const std::string ref = registry.host() + "/robots/arm:v1";
  auto pushed = run_cli("push -q " + quote(bundle) + " " + ref);
  REQUIRE_MESSAGE(pushed.exit_code == 0, pushed.err);
  const uint64_t offset = fs::file_size(bundle / "encoder.ptd") - 5;

  // The pull stopped after placing its files, before verify; `meanwhile` runs.
  auto pull_stopped = [&](const fs::path& out, const std::function<void()>& meanwhile) {
    ptb::test::ChildOptions options;
    options.env = {{"PTB_TEST_KILL_AT", "pull-verify"}, {"PTB_TEST_KILL_SIGNAL", "STOP"}};
    ptb::test::CliChild child({"pull", "--gpu", "none", ref, "-o", out.string()}, options);
    REQUIRE(child.wait_stopped());
    meanwhile();
    ::kill(child.pid(), SIGCONT);
    return child.wait();
  };

  SUBCASE("renamed over") {
    const fs::path out = work / "renamed";
    auto pulled = pull_stopped(out, [&] {
      fs::copy_file(out / "encoder.ptd", work / "changed.ptd");
      ptb::test::flip_byte(work / "changed.ptd", offset);
      fs::rename(work / "changed.ptd", out / "encoder.ptd");
    });
    CHECK(pulled.exit_code == 1);
    CHECK_MESSAGE(contains(pulled.out, "FAIL file " + (out / "encoder.ptd").string() + ": SHA-256 is"), pulled.out);
  }
  SUBCASE("written in place") {
    const fs::path out = work / "in_place";
    bool written = false;
    auto pulled = pull_stopped(out, [&] {
      int fd = ::open((out / "encoder.ptd").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        // Held by pull: the open waits for it (here, with O_NONBLOCK, fails).
        CHECK(errno == EWOULDBLOCK);
        return;
      }
      const char byte = 'x';
      written = ::pwrite(fd, &byte, 1, static_cast<off_t>(offset)) == 1;
      ::close(fd);
    });
    if (written) {
      CHECK(pulled.exit_code == 1);
      CHECK_MESSAGE(contains(pulled.out, "FAIL file " + (out / "encoder.ptd").string() + ": SHA-256 is"), pulled.out);
    } else {
      // Nothing changed, and the attempt took away pull's proof: verify
      // hashed the file itself.
      CHECK_MESSAGE(pulled.exit_code == 0, (pulled.out + pulled.err));
      CHECK(read_bytes(out / "encoder.ptd") == read_bytes(bundle / "encoder.ptd"));
    }
  }
  SUBCASE("unchanged: it verifies") {
    auto pulled = pull_stopped(work / "same", [] {});
    CHECK_MESSAGE(pulled.exit_code == 0, (pulled.out + pulled.err));
    CHECK(contains(pulled.out, "verify: ok"));
  }
}

TEST_CASE("registry: an interrupted pull leaves the previous state and no temporary file") {
  PTB_REQUIRE_FIXTURES();
  if (!require_programs({"python3"})) return;
  TempDir work;
  const fs::path bundle = work / "b";
  make_bundle(bundle);
  HostileRegistry hostile(bundle, "slow_drip");
  for (int signal : {SIGINT, SIGTERM}) {
    CAPTURE(signal);
    TempDir parent;
    const fs::path out = parent / "out";
    ServerChild pull({PTB_CLI_PATH, "pull", "-q", "--gpu", "none", hostile.host() + "/x/y:1", "-o", out.string()}, parent / "log");
    // Wait until the slow blob's temporary file exists, then interrupt.
    bool started = false;
    for (int i = 0; i < 200 && !started; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (const auto& name : files_under(out))
        if (ptb::is_temporary_name(fs::path(name).filename().string())) started = true;
    }
    CHECK(started);
    CHECK(pull.stop(signal) == 128 + signal);
    for (const auto& name : files_under(out)) {
      CHECK_MESSAGE(!ptb::is_temporary_name(fs::path(name).filename().string()), name);
      CHECK(name != ptb::kLockFileName);
    }
    CHECK(!fs::exists(out / "bundle.json"));
  }
}
