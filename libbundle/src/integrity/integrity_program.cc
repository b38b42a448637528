// What a program's delegates need from its files: data names that are safe
// file names and agree, every key they reference present with the size it
// needs, and per-FQN weight views inside their storage. ExecuTorch's runtime
// once loaded a part whose weights blob was missing and died at its first
// call with an illegal memory access; these checks find that on disk.
#include <set>

#include "integrity/integrity_internal.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/bundle/names.h"

namespace ptb::detail {
namespace {

constexpr const char* kIllegalAccess =
    "ExecuTorch's runtime loads such a part and fails only at its first call, with an illegal memory access";

std::string delegate_where(const ProgramContext& context, const MethodInfo& method, size_t index) {
  return context.program_name + ": " + method.name + " delegate " + std::to_string(index);
}

std::string where_looked(const ProgramContext& context) {
  if (const PtdFile* ptd = context.program->ptd()) return "neither " + ptd->path() + " nor " + context.program_name;
  std::string text = context.program_name + ", and no data file was given";
  if (!context.data_files_tried.empty()) text += " or found beside it (looked for " + join(context.data_files_tried, ", ") + ")";
  return text;
}

std::string data_fix(const ProgramContext& context) {
  if (context.expected_data_name) {
    return "export the part again (ptbundle export checks that its data file holds every key)";
  }
  return context.program->ptd() ? "give the data file this program was exported with (PATH.pte,PATH.ptd), or export it again"
                     : "give its data file as PATH.pte,PATH.ptd";
}

// --- data_name compile specs ---

void check_data_names(const ProgramContext& context, const std::vector<MethodInfo>& methods, CheckList& checks) {
  std::set<std::string> valid;
  size_t with_spec = 0;
  size_t problems = 0;
  for (const MethodInfo& method : methods) {
    for (size_t i = 0; i < method.delegates.size(); ++i) {
      const DelegateInfo& delegate = method.delegates[i];
      const std::string where = delegate_where(context, method, i);
      const CompileSpecEntry* spec = delegate.find_spec("data_name");
      if (!spec) {
        if (context.require_data_name && context.expected_data_name && delegate.id == kCudaBackendId) {
          ++problems;
          checks.fail(checks::kDataName, where,
                      "the CudaBackend delegate has no data_name compile spec; expected data_name=" +
                          in_quotes(*context.expected_data_name) +
                          ", the part's name (ptbundle export sets it); export the part again");
        }
        continue;
      }
      ++with_spec;
      const std::string name(spec->value.begin(), spec->value.end());
      auto named = check_part_name(name, where + ": compile spec data_name");
      if (!named.ok()) {
        ++problems;
        checks.fail(checks::kName, where,
                    named.error().message +
                        "; a data name becomes a file name (<data_name>.ptd), so ptbundle never opens it; "
                        "export the part again with ptbundle export, which sets a valid one");
        continue;
      }
      valid.insert(name);
      if (context.expected_data_name && name != *context.expected_data_name) {
        ++problems;
        checks.fail(checks::kDataName, where,
                    "compile spec data_name is " + in_quotes(name) + "; expected " + in_quotes(*context.expected_data_name) +
                        ", the part's name, so that the part reads " + *context.expected_data_name +
                        ".ptd and never another part's weights; export the part again");
      }
    }
  }
  if (valid.size() > 1) {
    ++problems;
    checks.fail(checks::kDataName, context.program_name,
                "delegates use the data names " + join(std::vector<std::string>(valid.begin(), valid.end()), ", ") +
                    "; all methods of one program share one data name (one data file); export it again");
  }
  if (problems != 0) return;
  if (with_spec == 0) {
    checks.pass(checks::kDataName, context.program_name, "no delegate has a data_name compile spec");
  } else {
    checks.pass(checks::kDataName, context.program_name,
                "data_name " + in_quotes(*valid.begin()) + " in " + std::to_string(with_spec) +
                    (with_spec == 1 ? " delegate" : " delegates") + ", a valid file name");
  }
}

// --- keys ---

bool is_elf(Bytes bytes) {
  return bytes.size() >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

// One failed check per problem; the number of problems.
size_t check_need(const ProgramContext& context, const std::string& where, const PayloadKey& need, CheckList& checks) {
  auto found = context.program->find(need.key);
  if (!found) {
    std::string consequence = need.library ? "ExecuTorch cannot load the delegate without it" : kIllegalAccess;
    checks.fail(checks::kDelegateKeys, where,
                "key " + in_quotes(need.key) + ", " + need.what + ", is in " + where_looked(context) + "; " +
                    consequence + "; " + data_fix(context));
    return 1;
  }
  const uint64_t size = found->bytes.size();
  if (need.library) {
    if (!is_elf(found->bytes)) {
      checks.fail(checks::kDelegateKeys, where,
                  found->file + ": key " + in_quotes(need.key) + ", " + need.what + ", holds " + std::to_string(size) +
                      " bytes that do not start with an ELF header; expected a shared library; export the part again");
      return 1;
    }
    return 0;
  }
  if (size == 0 && !need.exact_size && !context.no_weights) {
    checks.fail(checks::kDelegateKeys, where,
                found->file + ": key " + in_quotes(need.key) + ", " + need.what + ", is empty; " + kIllegalAccess +
                    "; " + data_fix(context));
    return 1;
  }
  if (need.exact_size && size < *need.exact_size) {
    checks.fail(checks::kDelegateKeys, where,
                found->file + ": key " + in_quotes(need.key) + ", " + need.what + ", holds " + std::to_string(size) +
                    " bytes; the payload's storage_nbytes needs " + std::to_string(*need.exact_size) +
                    " (a short blob: the kernels would read past its end; " + kIllegalAccess + "); " +
                    data_fix(context));
    return 1;
  }
  if (need.exact_size && size > *need.exact_size) {
    checks.fail(checks::kDelegateKeys, where,
                found->file + ": key " + in_quotes(need.key) + ", " + need.what + ", holds " + std::to_string(size) +
                    " bytes; the payload's storage_nbytes says " + std::to_string(*need.exact_size) +
                    ", and ExecuTorch's weight cache expects exactly that; " + data_fix(context));
    return 1;
  }
  return 0;
}

// The kernel files of a library found in the program (kernel_files.h): every
// name one a runner may create, every file the library names present.
size_t check_kernel_files(const ProgramContext& context, const std::string& where, const PayloadKey& need,
                          size_t& count, CheckList& checks) {
  auto files = kernel_files_of(context.program->pte(), need.key);
  if (!files.ok()) {
    checks.fail(checks::kDelegateKeys, where, files.error().message + "; export the part again");
    return 1;
  }
  std::vector<std::string> names;
  for (const KernelFile& file : *files) names.push_back(file.name);
  auto found = context.program->find(need.key);
  Status present = check_kernel_files_present(found->bytes, names, found->file + ": key " + in_quotes(need.key),
                                              "the program");
  if (!present.ok()) {
    checks.fail(checks::kDelegateKeys, where, present.error().message);
    return 1;
  }
  count += names.size();
  return 0;
}

size_t check_weight_views(const std::string& where, const CudaPayload& payload, CheckList& checks) {
  size_t problems = 0;
  for (const CudaWeight& weight : payload.weights) {
    auto reach = weight_view_bytes(weight);
    if (!reach.ok()) {
      ++problems;
      checks.fail(checks::kWeights, where,
                  "weight " + in_quotes(weight.fqn) + ": " + reach.error().message + "; the payload is malformed, export it again");
      continue;
    }
    if (*reach > weight.storage_nbytes) {
      ++problems;
      checks.fail(checks::kWeights, where,
                  "weight " + in_quotes(weight.fqn) + " (" + scalar_type_name(static_cast<int8_t>(weight.dtype)) +
                      ", sizes " + shape_text(weight.sizes) + ", strides " + shape_text(weight.strides) +
                      ", storage_offset " + std::to_string(weight.storage_offset) + ") reaches " +
                      std::to_string(*reach) + " bytes of its " + std::to_string(weight.storage_nbytes) +
                      "-byte storage " + in_quotes(weight.storage_key) + "; expected it to fit; export it again");
    }
  }
  return problems;
}

void check_cuda_delegate(const ProgramContext& context, const std::string& where, const CudaDelegate& delegate,
                         CheckList& checks) {
  auto decoded = delegate.decoded();
  if (!decoded.ok()) {
    checks.fail(checks::kDelegateKeys, where,
                decoded.error().message + "; export it again with ExecuTorch's CUDA backend or ptbundle export");
    return;
  }
  const CudaPayload& payload = **decoded;
  size_t problems = 0;
  size_t libraries = 0, blobs = 0, kernel_files = 0;
  uint64_t weight_bytes = 0;
  for (const PayloadKey& need : payload_keys(payload)) {
    size_t failed = check_need(context, where, need, checks);
    if (!failed && need.library) failed = check_kernel_files(context, where, need, kernel_files, checks);
    problems += failed;
    if (failed) continue;
    if (need.library) {
      ++libraries;
    } else {
      ++blobs;
      weight_bytes += context.program->find(need.key)->bytes.size();
    }
  }
  if (problems == 0) {
    checks.pass(checks::kDelegateKeys, where,
                std::string(cuda_payload_form_name(payload.form)) + " payload: " + std::to_string(libraries) +
                    (libraries == 1 ? " library" : " libraries") +
                    (kernel_files ? " (with " + std::to_string(kernel_files) + " kernel files)" : std::string()) +
                    " and " + std::to_string(blobs) +
                    (payload.form == CudaPayloadForm::MultiVariant ? " weight storages" : " weights blob") + " (" +
                    std::to_string(weight_bytes) + " bytes) present with the sizes they need" +
                    (context.weights_in_library ? " (bundle.json: the library holds its weights)"
                     : context.no_weights      ? " (bundle.json: the program has no weights)"
                                               : ""));
  }
  if (payload.form != CudaPayloadForm::MultiVariant) return;
  if (check_weight_views(where, payload, checks) == 0) {
    checks.pass(checks::kWeights, where,
                std::to_string(payload.weights.size()) + " weight views fit their storage");
  }
}

}  // namespace

void check_program_contents(const ProgramContext& context, CheckList& checks) {
  const std::vector<MethodInfo>& methods = context.program->methods();
  check_data_names(context, methods, checks);
  if (!context.check_keys) {
    checks.skip(checks::kDelegateKeys, context.program_name, "not checked: its data file did not open");
    return;
  }
  size_t delegates = 0;
  for (const MethodInfo& method : methods) delegates += method.delegates.size();
  const size_t cuda = context.program->cuda_delegates().size();
  const size_t others = delegates - cuda;
  for (const CudaDelegate& delegate : context.program->cuda_delegates()) {
    check_cuda_delegate(context, delegate_where(context, methods[delegate.plan], delegate.index), delegate, checks);
  }
  if (cuda != 0) return;
  if (others == 0) {
    checks.pass(checks::kDelegateKeys, context.program_name, "no delegate: the program references no external key");
  } else {
    checks.skip(checks::kDelegateKeys, context.program_name,
                std::to_string(others) + " delegate(s) of backends other than CudaBackend, whose payloads ptbundle cannot read");
  }
}

}  // namespace ptb::detail
