// `ptbundle verify PATH... [--gpu auto|sm_XY|none] [--json] [--verbose]`:
// every check on bundles, programs and packages (libbundle's integrity.h,
// libcuda's gpu_check.h); this file prints the outcomes. Exit 1 when any
// check failed, 2 for a bad command line.
#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "ptbundle/cuda/gpu_check.h"

namespace ptb::app {
namespace {

constexpr int kVerifyFormatVersion = 1;

struct VerifyArgs {
  std::vector<std::string> paths;
  std::string gpu = "auto";
  bool json = false;
  bool verbose = false;
  std::vector<std::string> keys;
  std::string keys_dir;
};

const char* mode_name(GpuMode mode) {
  switch (mode) {
    case GpuMode::Given: return "given";
    case GpuMode::None: return "none";
    case GpuMode::Auto: return "auto";
  }
  return "auto";
}

struct Tally {
  size_t passed = 0, failed = 0, skipped = 0;
  void add(CheckStatus status) {
    if (status == CheckStatus::Pass) ++passed;
    else if (status == CheckStatus::Fail) ++failed;
    else ++skipped;
  }
  size_t total() const { return passed + failed + skipped; }
};

Tally tally_of(const std::vector<CheckOutcome>& outcomes, const std::string* path) {
  Tally tally;
  for (const auto& outcome : outcomes) {
    if (!path || outcome.path == *path) tally.add(outcome.status);
  }
  return tally;
}

Json gpu_json(const GpuTarget& gpu) {
  Json out;
  out["mode"] = mode_name(gpu.mode);
  out["description"] = gpu.description;
  out["capabilities"] = Json::array();
  for (const auto& capability : gpu.capabilities) out["capabilities"].push_back(capability.name());
  out["driver_version"] = gpu.driver_version ? Json(cuda_version_name(gpu.driver_version)) : Json(nullptr);
  out["skip_reason"] = gpu.skip_reason.empty() ? Json(nullptr) : Json(gpu.skip_reason);
  return out;
}

const SignatureSummary* signature_of(const VerifyReport& report, const std::string& path) {
  for (const auto& summary : report.signatures) {
    if (summary.path == path && summary.file) return &summary;
  }
  return nullptr;
}

Json signature_json(const SignatureSummary* summary) {
  if (!summary) return nullptr;
  auto optional = [](const std::optional<std::string>& text) { return text ? Json(*text) : Json(nullptr); };
  return {{"file", *summary->file},
          {"key_fingerprint", optional(summary->key_fingerprint)},
          {"key", optional(summary->key)},
          {"curve", optional(summary->curve)},
          {"verified", summary->verified}};
}

void print_json_report(const VerifyReport& report, const VerifyArgs& args) {
  const auto& outcomes = report.checks.outcomes();
  Json document;
  document["ptbundle_verify_version"] = kVerifyFormatVersion;
  document["ok"] = !report.checks.failed();
  document["gpu"] = gpu_json(report.gpu);
  Tally all = tally_of(outcomes, nullptr);
  document["summary"] = {{"checks", all.total()}, {"passed", all.passed}, {"failed", all.failed}, {"skipped", all.skipped}};
  document["paths"] = Json::array();
  for (const auto& path : args.paths) {
    Tally tally = tally_of(outcomes, &path);
    document["paths"].push_back({{"path", path},
                                 {"ok", tally.failed == 0},
                                 {"passed", tally.passed},
                                 {"failed", tally.failed},
                                 {"skipped", tally.skipped},
                                 {"signature", signature_json(signature_of(report, path))}});
  }
  document["checks"] = Json::array();
  for (const auto& outcome : outcomes) {
    document["checks"].push_back({{"check", outcome.check},
                                  {"subject", outcome.subject},
                                  {"status", check_status_name(outcome.status)},
                                  {"message", outcome.message},
                                  {"path", outcome.path}});
  }
  print_json(document);
}


const char* status_word(CheckStatus status) {
  switch (status) {
    case CheckStatus::Fail: return "FAIL";
    case CheckStatus::Skip: return "skip";
    case CheckStatus::Pass: return "ok  ";
  }
  return "ok  ";
}

void print_text_report(const VerifyReport& report, const VerifyArgs& args) {
  for (const auto& path : args.paths) {
    for (const auto& outcome : report.checks.outcomes()) {
      if (outcome.path != path || (outcome.status == CheckStatus::Pass && !args.verbose)) continue;
      // A message that starts with its subject (GPU verdicts name the part) is not preceded by it again.
      std::cout << status_word(outcome.status) << ' ' << outcome.check << ' ';
      if (!outcome.message.starts_with(outcome.subject)) std::cout << printable(outcome.subject) << ": ";
      std::cout << printable(outcome.message) << '\n';
    }
    if (const SignatureSummary* signature = signature_of(report, path)) {
      std::cout << "signature " << *signature->file << ": key fingerprint " << signature->key_fingerprint.value_or("(none)")
                << (signature->verified ? ", verified with " + *signature->key
                    : signature->key    ? ", verified with " + *signature->key + ", but the files differ from it"
                                        : std::string(", not verified")) << '\n';
    }
    Tally tally = tally_of(report.checks.outcomes(), &path);
    std::cout << path << ": " << (tally.failed ? "FAILED, " + std::to_string(tally.failed) + " problem(s)" : std::string("ok"))
              << " (" << tally.total() << " checks: " << tally.passed << " passed, " << tally.failed << " failed, "
              << tally.skipped << " skipped; GPU: " << report.gpu.description << ")\n";
  }
}

int run_verify(const VerifyArgs& args) {
  VerifyOptions options;
  options.gpu = args.gpu;
  for (const auto& path : args.keys) {
    auto key = PublicKey::load(path);
    if (!key.ok()) return report(key.error());
    options.keys.push_back(std::move(*key));
  }
  if (!args.keys_dir.empty()) {
    auto keys = load_public_keys_dir(args.keys_dir);
    if (!keys.ok()) return report(keys.error());
    for (auto& key : *keys) options.keys.push_back(std::move(key));
  }
  auto verified = verify_paths(args.paths, options);
  if (!verified.ok()) return report(verified.error());
  if (args.json) print_json_report(*verified, args);
  else print_text_report(*verified, args);
  std::cout.flush();
  if (!std::cout) return report(io_error("stdout: cannot write the report"));
  return verified->checks.failed() ? static_cast<int>(ErrorKind::Invalid) : 0;
}

}  // namespace

Action add_verify(CLI::App& root) {
  auto* command = root.add_subcommand(
      "verify",
      "Check bundles, programs (.pte with its .ptd, .bpte) and AOTInductor packages (.pt2) before they are\n"
      "loaded: names, the manifest against the files (sizes, SHA-256, nothing unlisted), every key a delegate\n"
      "needs with its size, weights inside their storage, whether each CUDA part can run on the GPU, and the\n"
      "recorded test cases (with the LibTorch runner and a GPU). Every problem is one line; exit 1 if any.\n"
      "See ptbundle-verify(1).");
  auto args = std::make_shared<VerifyArgs>();
  command->add_option("PATH", args->paths,
                      "Bundle folders, programs (model.pte, or model.pte,data.ptd), .bpte files or .pt2 packages")
      ->required();
  command->add_option("--gpu", args->gpu,
                      "The GPU to check against: auto (this machine's; none found: skipped), a compute capability\n"
                      "(sm_86, 8.6, 86) or none")
      ->default_val("auto");
  command->add_flag("--json", args->json,
                    "One JSON document on stdout listing every check with its outcome, described by\n"
                    "schemas/verify.schema.json");
  command->add_flag("--verbose,-v", args->verbose, "Also list the checks that passed");
  command->add_option("--key", args->keys,
                      "Public key (PEM) the bundles must be signed with (repeatable; any one of them); checked first,\n"
                      "then every file against the signature");
  command->add_option("--keys-dir", args->keys_dir, "Folder of public keys (*.pem, *.pub), as --key for each");
  return [args] { return run_verify(*args); };
}

}  // namespace ptb::app
