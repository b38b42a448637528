// ptb::robot::Bundle: a look into a bundle without a GPU, from bundle.json
// (checked against the signature when keys are given) and, for the dynamic
// bounds, each method's library.
#include "checked_open.h"
#include "ptbundle/base/dtype.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/kernels/aoti_input_bounds.h"

namespace ptb::robot {
namespace {

TensorInfo tensor_info(const ManifestValue& value, const std::string& name) {
  TensorInfo info;
  info.name = name;
  if (value.kind != "tensor") return info;
  auto number = scalar_type_from_name(value.dtype);
  auto dtype = number ? dtype_from_number(*number) : std::nullopt;
  if (!dtype) return info;
  info.known = true;
  info.dtype = *dtype;
  info.shape = value.shape;
  return info;
}

// The dynamic bounds of `method`'s inputs, from its library (the first
// variant's: every variant is compiled from one graph).
void add_bounds(const std::string& path, const std::string& part, MethodInfo& method) {
  RunPartOptions options;
  options.part = part;
  options.method = method.name;
  auto input = open_run_input(path, options);
  if (!input.ok() || input->candidates.empty()) return;
  const RunCandidate& candidate = input->candidates.front();
  Bytes library = !candidate.libraries.empty() ? candidate.libraries.front() : candidate.part.library;
  const AotiInputBounds bounds = read_aoti_input_bounds(library);
  for (const AotiDynamicDim& d : bounds.dims) {
    if (d.input >= method.inputs.size()) continue;
    method.inputs[d.input].dynamic.push_back({d.dim, d.min.value_or(-1), d.max.value_or(-1)});
  }
}

}  // namespace

const PartInfo* Bundle::find_part(std::string_view name) const {
  for (const PartInfo& part : parts_)
    if (part.name == name) return &part;
  return nullptr;
}

Result<Bundle> Bundle::open(const std::string& path, const Options& options) {
  PTB_TRY(detail::OpenedManifest opened, detail::open_manifest(path));
  IntegrityOptions integrity;
  PTB_TRY(integrity.keys, detail::load_keys(options.keys));
  integrity.require_signature = options.require_signature;
  CheckList checks;
  SignatureSummary summary;
  check_opened_part(opened.bundle.dir(), opened.bytes->bytes(), nullptr, integrity, checks, summary);
  PTB_CHECK(detail::first_failure(checks, path));

  Bundle bundle;
  bundle.path_ = opened.bundle.path();
  bundle.signature_ = detail::signature_info(summary, checks);
  for (const ManifestPart& entry : opened.manifest->parts) {
    PartInfo part;
    part.name = entry.name;
    part.source = entry.source.kind;
    part.has_testcase = entry.testcase.has_value();
    if (entry.cuda)
      for (const KernelTarget& target : entry.cuda->kernel_targets) part.gpu_targets.push_back(target.target);
    for (const ManifestMethod& m : entry.methods) {
      MethodInfo method;
      method.name = m.name;
      for (size_t i = 0; i < m.inputs.size(); ++i) method.inputs.push_back(tensor_info(m.inputs[i], "input " + std::to_string(i)));
      for (size_t i = 0; i < m.outputs.size(); ++i)
        method.outputs.push_back(tensor_info(m.outputs[i], "output " + std::to_string(i)));
      add_bounds(path, entry.name, method);
      part.methods.push_back(std::move(method));
    }
    bundle.parts_.push_back(std::move(part));
  }
  return bundle;
}

}  // namespace ptb::robot
