// Reproducing recorded test cases: a bundle part's testcases/<part>.ptd and
// a BundledProgram's test suites, run on a GPU of this machine by the runtime
// that serves the part (the built-in runtime, or LibTorch for libraries linked
// to it) and compared with tolerance.h's rule. Where that cannot happen (no
// runtime built, no GPU, the part does not run on it) the check is skipped
// with the reason, never passed.
#include <algorithm>

#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/results/tolerance.h"

namespace ptb {
namespace {

std::vector<uint64_t> shape_of(const std::vector<int32_t>& sizes) {
  std::vector<uint64_t> shape;
  for (int32_t size : sizes) shape.push_back(static_cast<uint64_t>(size));
  return shape;
}

std::vector<uint64_t> shape_of(const std::vector<int64_t>& sizes) {
  std::vector<uint64_t> shape;
  for (int64_t size : sizes) shape.push_back(static_cast<uint64_t>(size));
  return shape;
}

// Loads the part, then runs the test case on it.
void run_and_compare(const std::string& subject, const std::string& part_name, const RunPart& part, int device,
                     const std::vector<HostTensor>& inputs, const std::vector<ExpectedOutput>& wanted,
                     CheckList& checks) {
  LoadOptions options;
  options.device = device;
  auto model = load_part(part, options);
  if (!model.ok()) {
    checks.fail(checks::kTestcase, subject, model.error().message);
    return;
  }
  run_testcase(subject, part_name, *model, device, {inputs, wanted}, checks);
}

void reproduce_bundle_part(const VerifySubject& subject, GpuCapability gpu, int device, uint32_t driver_version,
                           CheckList& checks) {
  RunPartOptions options;
  options.part = subject.part_name;
  options.method = subject.testcase_method;
  options.gpu = gpu;
  options.driver_version = driver_version;
  // The subject's program and data file, as the integrity checks opened them.
  auto part = open_run_part(subject.program, subject.part_name, options);
  if (!part.ok()) {
    checks.fail(checks::kTestcase, subject.label, part.error().message);
    return;
  }
  auto test = read_part_testcase(*subject.manifest, *subject.testcase, subject.testcase_method, *subject.program);
  if (!test.ok()) {
    checks.fail(checks::kTestcase, subject.label, test.error().message);
    return;
  }
  run_and_compare(subject.label, subject.part_name, *part, device, test->inputs, test->wanted, checks);
}

// The program inside the .bpte and its data file, as the integrity checks
// opened them: nothing is written or read again.
void reproduce_bundled_program(const VerifySubject& subject, GpuCapability gpu, int device, uint32_t driver_version,
                               CheckList& checks) {
  size_t cases = 0;
  for (const BundledTestSuite& suite : subject.bpte->test_suites()) {
    for (size_t c = 0; c < suite.test_cases.size(); ++c, ++cases) {
      const std::string where = subject.label + ": " + suite.method_name + " test case " + std::to_string(c);
      const BundledTestCase& test = suite.test_cases[c];
      std::vector<HostTensor> inputs;
      std::vector<ExpectedOutput> expected;
      std::string unsupported;
      for (size_t i = 0; i < test.inputs.size() && unsupported.empty(); ++i) {
        const BundledValue& value = test.inputs[i];
        if (!value.tensor) unsupported = "input " + std::to_string(i) + " is a " + value.kind;
        else inputs.push_back({value.tensor->scalar_type, shape_of(value.tensor->sizes), {value.tensor->data.begin(), value.tensor->data.end()}});
      }
      for (size_t i = 0; i < test.expected_outputs.size() && unsupported.empty(); ++i) {
        const BundledValue& value = test.expected_outputs[i];
        if (!value.tensor) unsupported = "expected output " + std::to_string(i) + " is a " + value.kind;
        else {
          TensorBytes tensor{value.tensor->scalar_type, shape_of(value.tensor->sizes), value.tensor->data};
          expected.push_back({i, "output " + std::to_string(i), tensor, output_tolerance(tensor), true});
        }
      }
      if (!unsupported.empty()) {
        checks.skip(checks::kTestcase, where, unsupported + "; ptbundle runs tensors only");
        continue;
      }
      RunPartOptions options;
      options.part = subject.part_name;
      options.method = suite.method_name;
      options.gpu = gpu;
      options.driver_version = driver_version;
      auto part = open_run_part(subject.program, subject.part_name, options);
      if (!part.ok()) {
        checks.fail(checks::kTestcase, where, part.error().message);
        continue;
      }
      run_and_compare(where, subject.part_name, *part, device, inputs, expected, checks);
    }
  }
  if (cases == 0) checks.skip(checks::kTestcase, subject.label, "the BundledProgram holds no test case");
}

bool has_cuda_delegate(const VerifySubject& subject) {
  return subject.kind == SubjectKind::Package || subject.program->has_cuda();
}

bool has_test_case(const VerifySubject& subject) {
  if (subject.kind == SubjectKind::BundledProgram) return true;
  return subject.testcase != nullptr;
}

std::string no_test_case_reason(const VerifySubject& subject) {
  if (subject.manifest && subject.manifest->testcase) return "its test-case file failed its checks (see testcase_file)";
  if (subject.manifest) return "the part records no test case; export it with --example to add one";
  if (subject.kind == SubjectKind::Package) return "a .pt2 package records no test case; export it with --example to add one";
  return "a lone .pte records no test case; export it into a bundle with --example to add one";
}

}  // namespace

Result<PartTestCase> read_part_testcase(const ManifestPart& part, const PtdFile& file, const std::string& method_name,
                                        const ProgramWithData& program) {
  if (!part.testcase) return invalid("part " + part.name + " records no test case");
  std::vector<HostTensor> inputs;
  // The test-case file passed its checks: every key is there with a layout.
  for (uint32_t i = 0; i < part.testcase->inputs; ++i) {
    const PtdEntry* found = file.find(testcase_key(method_name, false, i));
    if (!found || !found->layout) return invalid(file.path() + ": no tensor " + testcase_key(method_name, false, i));
    const PtdEntry& entry = *found;
    Bytes bytes = file.bytes(entry);
    inputs.push_back({entry.layout->scalar_type, shape_of(entry.layout->sizes), {bytes.begin(), bytes.end()}});
  }
  // What export recorded: each output's tolerance, or (bundles written before
  // output_checks) one for all. A sampler's outputs have no expected values:
  // the method's signature gives their dtype and shape (the test-case file
  // check compared its count with bundle.json's).
  const ManifestTestcase& testcase = *part.testcase;
  const MethodInfo* method = nullptr;
  for (const MethodInfo& m : program.methods())
    if (m.name == method_name) method = &m;
  std::vector<ExpectedOutput> wanted;
  for (uint32_t i = 0; i < testcase.outputs; ++i) {
    ExpectedOutput want;
    want.index = i;
    want.name = "output " + std::to_string(i);
    if (i < testcase.output_checks.size() && !testcase.output_checks[i].compare_values) {
      if (!method || i >= method->outputs.size() || !method->outputs[i].tensor) {
        return invalid("output " + std::to_string(i) + " has no tensor in the method's signature");
      }
      want.compare_values = false;
      want.tensor = {method->outputs[i].tensor->scalar_type, shape_of(method->outputs[i].tensor->sizes), Bytes()};
      want.tolerance.rule = testcase.output_checks[i].rule;
    } else {
      const PtdEntry* found = file.find(testcase_key(method_name, true, i));
      if (!found || !found->layout) return invalid(file.path() + ": no tensor " + testcase_key(method_name, true, i));
      const PtdEntry& entry = *found;
      want.tensor = {entry.layout->scalar_type, shape_of(entry.layout->sizes), file.bytes(entry)};
      if (i < testcase.output_checks.size()) {
        const ManifestOutputCheck& c = testcase.output_checks[i];
        want.tolerance = {c.atol, c.rtol, "recorded in bundle.json: " + c.rule};
      } else {
        want.tolerance = {testcase.atol, testcase.rtol, "recorded in bundle.json for every output"};
      }
    }
    wanted.push_back(std::move(want));
  }
  return PartTestCase{std::move(inputs), std::move(wanted)};
}

void run_testcase(const std::string& subject, const std::string& part_name, AotiModel& model, int device,
                  const PartTestCase& test, CheckList& checks) {
  auto outputs = model.run(test.inputs);
  if (!outputs.ok()) {
    checks.fail(checks::kTestcase, subject, outputs.error().message);
    return;
  }
  const std::vector<OutputComparison> comparisons = compare_outputs(*outputs, test.wanted);
  const std::string verdict = test_case_verdict(part_name, comparisons);
  bool passed = std::all_of(comparisons.begin(), comparisons.end(), [](const OutputComparison& c) { return c.passed(); });
  if (passed) checks.pass(checks::kTestcase, subject, verdict + " on GPU " + std::to_string(device));
  else checks.fail(checks::kTestcase, subject, verdict);
}

void check_testcases(const VerifySubject& subject, const GpusToCheck& gpu, const std::vector<GpuCapability>& runs_on,
                     CheckList& checks) {
  if (!has_test_case(subject)) {
    checks.skip(checks::kTestcase, subject.label, no_test_case_reason(subject));
    return;
  }
  if (!has_cuda_delegate(subject)) {
    checks.skip(checks::kTestcase, subject.label,
                "not reproduced: ptbundle runs CUDA (AOTInductor) programs only, and this one has no CudaBackend delegate");
    return;
  }
  if (!kRunnerBuilt) {
    checks.skip(checks::kTestcase, subject.label, "not reproduced: " + runner_unavailable_reason());
    return;
  }
  if (gpu.mode == GpuMode::None) {
    checks.skip(checks::kTestcase, subject.label, "not reproduced: --gpu none");
    return;
  }
  if (gpu.local_gpus.empty()) {
    checks.skip(checks::kTestcase, subject.label, "not reproduced: no CUDA GPU: " + gpu.local_reason);
    return;
  }
  // The first GPU here that was judged (every one with --gpu auto; with
  // --gpu sm_XY, one of that capability).
  const GpuInfo* device = nullptr;
  for (const GpuInfo& local : gpu.local_gpus) {
    if (std::find(gpu.capabilities.begin(), gpu.capabilities.end(), local.capability) != gpu.capabilities.end()) {
      device = &local;
      break;
    }
  }
  if (!device) {
    checks.skip(checks::kTestcase, subject.label,
                "not reproduced: test cases run on a GPU of this machine, and none is " + gpu.capabilities.front().name() +
                    " (this machine has " + gpu.local_gpus.front().name + ", " + gpu.local_gpus.front().capability.name() + ")");
    return;
  }
  if (std::find(runs_on.begin(), runs_on.end(), device->capability) == runs_on.end()) {
    checks.skip(checks::kTestcase, subject.label,
                "not reproduced: it cannot run on " + device->capability.name() + " (see the gpu check)");
    return;
  }
  if (subject.kind == SubjectKind::BundledProgram) {
    reproduce_bundled_program(subject, device->capability, device->index, gpu.driver_version, checks);
  } else {
    reproduce_bundle_part(subject, device->capability, device->index, gpu.driver_version, checks);
  }
}

}  // namespace ptb
