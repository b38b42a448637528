// `ptbundle verify PATH... [--gpu auto|sm_XY|none] [--json] [--verbose]`:
// every check on bundles, programs and packages (libbundle's integrity.h,
// libcuda's gpu_check.h); this file prints the outcomes. Exit 1 when any
// check failed, 2 for a bad command line.
#include <memory>
#include <ostream>

#include "command.h"
#include "trust_flags.h"
#include "ptbundle/cuda/gpu_check.h"

namespace ptb::app {
namespace {

struct VerifyArgs {
  std::vector<std::string> paths;
  std::string gpu = "auto";
  TrustArgs trust;
  bool verbose = false;
};

// Text for people; the JSON is the report's own fields (gpu_check.h).
struct VerifyText {
  const VerifyReport& report;
  bool verbose = false;  // list the checks that passed too
  template <class F>
  void fields(F& f) const {
    report.fields(f);
  }
};

const char* status_word(CheckStatus status) {
  switch (status) {
    case CheckStatus::Fail: return "FAIL";
    case CheckStatus::Skip: return "skip";
    case CheckStatus::Pass: return "ok  ";
    case CheckStatus::Warn: return "WARN";
  }
  return "ok  ";
}

void render_text(std::ostream& out, const VerifyText& text) {
  const VerifyReport& report = text.report;
  for (const std::string& path : report.paths) {
    for (const CheckOutcome& outcome : report.checks.outcomes()) {
      if (outcome.path != path || (outcome.status == CheckStatus::Pass && !text.verbose)) continue;
      // A message that starts with its subject (GPU verdicts name the part) is not preceded by it again.
      out << status_word(outcome.status) << ' ' << outcome.check << ' ';
      if (!outcome.message.starts_with(outcome.subject)) out << printable(outcome.subject) << ": ";
      out << printable(outcome.message) << '\n';
    }
    if (const SignatureSummary* signature = report.signature(path)) {
      // Unverified, the fingerprint is only what the file claims.
      const std::string fingerprint = signature->key_fingerprint.value_or("(none)");
      out << "signature " << *signature->file << ": "
          << (signature->verified ? "key fingerprint " + fingerprint + ", verified with " + *signature->key
              : signature->key    ? "key fingerprint " + fingerprint + ", verified with " + *signature->key +
                                     ", but the files differ from it"
                                  : "claims key fingerprint " + fingerprint + " (from the file), not verified")
          << '\n';
    }
    const CheckTally tally = report.tally(path);
    out << path << ": "
        << (tally.failed ? "FAILED, " + std::to_string(tally.failed) + " problem(s)" : std::string("ok")) << " ("
        << tally.total() << " checks: " << tally.passed << " passed, " << tally.failed << " failed, " << tally.skipped
        << " skipped, " << tally.warned << " warned; GPU: " << report.gpu.description << ")\n";
  }
}

int run_verify(const VerifyArgs& args, Output& out) {
  VerifyOptions options;
  options.gpu = args.gpu;
  options.require_signature = args.trust.require_signature;
  options.progress = out.progress();
  auto keys = load_trusted_keys(args.trust);
  if (!keys.ok()) return out.fail(keys.error());
  options.keys = std::move(*keys);
  auto verified = verify_paths(args.paths, options);
  if (!verified.ok()) return out.fail(verified.error());
  const int exit_code = verified->checks.failed() ? static_cast<int>(ErrorKind::Invalid) : 0;
  return out.print(VerifyText{*verified, args.verbose}, exit_code);
}

}  // namespace

Command add_verify(Cli& cli) {
  CommandLine command = cli.add_command(
      "verify",
      "Check bundles, programs (.pte with its .ptd, .bpte) and AOTInductor packages (.pt2) before they are\n"
      "loaded: names, the manifest against the files (sizes, SHA-256, nothing unlisted), every key a delegate\n"
      "needs with its size, weights inside their storage, whether each CUDA part can run on the GPU, and the\n"
      "recorded test cases (on a GPU of this machine). Every problem is one line; exit 1 if any.\n"
      "See ptbundle-verify(1).");
  auto args = std::make_shared<VerifyArgs>();
  command.option("PATH", args->paths,
                      "Bundle folders, programs (model.pte, or model.pte,data.ptd), .bpte files or .pt2 packages")
      .required();
  command.option("--gpu", args->gpu,
                      "The GPU to check against: auto (this machine's; none found: skipped), a compute capability\n"
                      "(sm_86, 8.6, 86) or none")
      .shown_default("auto");
  add_trust_flags(command, args->trust, "first, then every file against the signature");
  command.json_flag("One JSON document on stdout listing every check with its outcome, described by\n"
                    "schemas/verify.schema.json");
  command.flag("--verbose,-v", args->verbose, "Also list the checks that passed");
  return {command, [args](Output& out) { return run_verify(*args, out); }};
}

}  // namespace ptb::app
