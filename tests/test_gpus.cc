// GPU discovery and `ptbundle gpus`, which must answer on machines without a
// driver; and the GPU check (the GPU tier, `ctest --preset gpu`): the
// driver's own cuModuleLoadData agrees with our verdicts.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "kernel_images.h"
#include "ptbundle/kernels/compat.h"
#include "ptbundle/cuda/gpu.h"

using namespace ptb;
using namespace ptb::test;

using ptb::test::contains;

namespace {


// The CUDA toolkit's stub driver: it exports the whole driver API and refuses
// to start, as a machine with the toolkit but no driver does.
const char* kStubDriver = "/usr/local/cuda/lib64/stubs/libcuda.so";

// Runs `work` in a forked child and returns what it returned.
std::string in_child_process(const std::function<std::string()>& work) {
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_ends[0]);
    const std::string text = work();
    const ssize_t written = write(pipe_ends[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(pipe_ends[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_ends[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  return text;
}

}  // namespace

TEST_CASE("gpus: a missing driver library is a report with the reason, not an error") {
  const GpuReport report = discover_gpus("/nonexistent/ptbundle/libcuda.so.1");
  CHECK_FALSE(report.driver_loaded);
  CHECK(report.gpus.empty());
  CHECK(report.driver_version == 0);
  CHECK(report.reason.find("/nonexistent/ptbundle/libcuda.so.1 not found: ") == 0);
}

TEST_CASE("gpus: a driver that cannot start (the toolkit's stub) is a report with the reason") {
  if (!fs::exists(kStubDriver)) {
    skip(std::string(kStubDriver) + " not found (no CUDA toolkit)");
    return;
  }
  // In a child process: the stub's soname is libcuda.so.1, so once loaded it
  // would answer every later dlopen("libcuda.so.1") of this test process.
  const std::string answer = in_child_process([] {
    const GpuReport report = discover_gpus(kStubDriver);
    auto load = load_module_on_gpu(0, Bytes(), kStubDriver);
    return std::string(report.driver_loaded ? "loaded" : "not loaded") + "|" + std::to_string(report.gpus.size()) +
           "|" + report.reason + "|" + (load.ok() ? "ok" : load.error().message);
  });
  CHECK(answer ==
        "loaded|0|cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)|no CUDA GPU: cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)");
}

TEST_CASE("gpus: the command answers with exit 0 whether or not there is a GPU") {
  const GpuReport report = discover_gpus();
  const auto text = run_cli("gpus");
  CHECK(text.exit_code == 0);
  const auto json_run = run_cli("gpus --json");
  CHECK(json_run.exit_code == 0);
  const auto document = nlohmann::json::parse(json_run.out);
  CHECK(document["gpus"].size() == report.gpus.size());
  if (report.gpus.empty()) {
    CHECK(text.out.empty());  // stdout lists GPUs: none
    CHECK(text.err == "no CUDA GPU: " + report.reason + "\n");
    CHECK(document["reason"] == "no CUDA GPU: " + report.reason);
    CHECK(document["driver"]["loaded"] == report.driver_loaded);
    CHECK(contains(document["reason"].get<std::string>(), "no CUDA GPU: "));
  } else {
    CHECK(text.err.empty());
    CHECK(document["reason"].is_null());
    CHECK(document["gpus"][0]["sm"] == report.gpus[0].capability.name());
    CHECK(document["gpus"][0]["uuid"] == report.gpus[0].uuid);
    CHECK(contains(text.out, report.gpus[0].name + "  " + report.gpus[0].capability.name()));
    CHECK(contains(text.out, "driver: CUDA " + cuda_version_name(report.driver_version)));
  }
}

namespace {

struct Module {
  std::string label;
  std::vector<uint8_t> bytes;
  bool expected_to_load = false;
  std::string why;
};

// The bytes the driver loads for each module of `images` scanned from `data`,
// with our verdict on `capability`.
void add_modules(const std::string& label, const std::vector<uint8_t>& data, GpuCapability capability,
                 uint32_t driver_version, std::vector<Module>& modules) {
  const auto images = scan_ok(data, label);
  const auto verdict = judge_kernels(images, capability, driver_version);
  for (const ModuleVerdict& module : verdict.modules) {
    const KernelImage& first = images[module.images.front()];
    uint64_t offset = first.offset, size = first.size;
    if (first.container == KernelContainer::Fatbin) {
      offset = first.container_offset;
      size = first.container_size;
    }
    Module entry;
    entry.label = label + " " + module.location;
    entry.bytes.assign(data.begin() + static_cast<long>(offset), data.begin() + static_cast<long>(offset + size));
    entry.expected_to_load = module.runs;
    for (size_t i : module.images) entry.why += verdict.images[i].reason + "; ";
    modules.push_back(std::move(entry));
  }
}

// nvidia-smi's compute capability ("9.0") of the GPU with this UUID, or ""
// when nvidia-smi is absent or does not list it.
std::string smi_capability(const std::string& uuid) {
  FILE* pipe = ::popen("nvidia-smi --query-gpu=uuid,compute_cap --format=csv,noheader 2>/dev/null", "r");
  if (!pipe) return "";
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) text += buffer;
  ::pclose(pipe);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t comma = line.find(", ");
    if (comma != std::string::npos && line.substr(0, comma) == uuid) return line.substr(comma + 2);
  }
  return "";
}

}  // namespace

TEST_CASE("GPU check: the device's capability is nvidia-smi's, and the driver loads exactly the images we say run" *
          doctest::test_suite("gpu")) {
  const GpuReport report = discover_gpus();
  if (report.gpus.empty()) {
    skip("no CUDA GPU: " + report.reason);
    return;
  }
  const GpuInfo& device = report.gpus[0];
  MESSAGE("GPU 0: " << device.name << ", " << device.capability.name() << ", driver CUDA "
                    << cuda_version_name(report.driver_version));
  // Any GPU will do: the capability is checked against nvidia-smi's reading
  // of the same device (by UUID), where nvidia-smi is installed.
  CHECK(device.capability.major >= 3);
  const std::string smi = smi_capability(device.uuid);
  if (smi.empty()) {
    MESSAGE("nvidia-smi not found or does not list " << device.uuid << ": capability not cross-checked");
  } else {
    CHECK(smi == std::to_string(device.capability.major) + "." + std::to_string(device.capability.minor));
  }
  CHECK(device.memory_bytes > 0);
  CHECK(device.uuid.starts_with("GPU-"));

  std::vector<Module> modules;
  const GpuCapability capability = device.capability;
  if (!kernels_dir().empty()) {
    for (const auto& entry : fs::directory_iterator(kernels_dir())) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".cubin") || name.ends_with(".fatbin") || name.ends_with(".ptx") || name.ends_with(".so"))
        add_modules(name, read_bytes(entry.path()), capability, report.driver_version, modules);
    }
  } else {
    MESSAGE("no nvcc-built images: " << kernels_missing());
  }
  if (fixtures_dir()) {
    for (const char* so : {"sm80.so", "sm86.so", "sm89.so", "sm90.so", "sm120.so", "compute75.so"})
      add_modules(so, read_bytes(fixture(std::string("cuda/so/") + so)), capability, report.driver_version, modules);
    for (const char* package : {"mlp_et.pt2", "mlp_et_ptx.pt2"})
      add_modules(package, read_pt2_entry(fixture(std::string("aoti/") + package), ".wrapper.so"), capability,
                  report.driver_version, modules);
  } else {
    MESSAGE("no fixtures: ../shared/fixtures not found");
  }
  REQUIRE_FALSE(modules.empty());

  int loaded = 0, refused = 0;
  for (const Module& module : modules) {
    auto result = load_module_on_gpu(device.index, Bytes(module.bytes.data(), module.bytes.size()));
    REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
    CAPTURE(module.label);
    CAPTURE(module.why);
    CAPTURE(result->code_name);
    CHECK(result->loaded == module.expected_to_load);
    (result->loaded ? loaded : refused) += 1;
  }
  MESSAGE(modules.size() << " modules: " << loaded << " loaded, " << refused << " refused, as predicted");
  // Both outcomes were exercised, or the comparison proves little.
  CHECK(loaded > 0);
  CHECK(refused > 0);
}
