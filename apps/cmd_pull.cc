// `ptbundle pull REF -o DIR [--part NAME] [--key K]... [--require-signature]
// [--gpu auto|sm_XY|none] [--plain-http] [-q] [--json]`: a bundle fetched from
// an OCI registry into DIR (libregistry's registry/pull.h: digests checked as
// bytes arrive, the signature before anything is placed, one transaction),
// then verify's checks on DIR, as `ptbundle verify` runs them. Parsing and
// printing only.

#include <memory>
#include <optional>
#include <ostream>

#include "command.h"
#include "trust_flags.h"
#include "ptbundle/base/file.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/registry/pull.h"

namespace ptb::app {
namespace {

struct PullArgs {
  std::string reference;
  std::string output;
  std::string part;
  TrustArgs trust;
  std::string gpu = "auto";
  bool plain_http = false;
};

// verify's verdict on DIR, as pull's report shows it: the report's own
// members, read through a reference.
struct VerifyVerdict {
  const VerifyReport* report = nullptr;
  template <class F>
  void fields(F& f) const {
    f("ok", !report->checks.failed())("gpu", report->gpu.description)("summary", report->tally())(
        "checks", report->checks.outcomes());
  }
};

struct PullOutput {
  const PullReport& pull;
  std::optional<VerifyVerdict> verify;
  std::optional<std::string> verify_skipped;
  template <class F>
  void fields(F& f) const {
    pull.fields(f);
    f("verify", verify)("verify_skipped", verify_skipped);
  }
};

void render_text(std::ostream& out, const PullOutput& output) {
  const PullReport& report = output.pull;
  for (const auto& file : report.files)
    out << "  " << file.action << (file.action == "kept" ? "       " : " ") << printable(file.path) << " ("
        << human_size(file.size) << ")\n";
  out << "pulled " << report.reference << "@" << report.digest << " into " << report.directory << ": "
      << report.downloaded << " file(s) downloaded (" << human_size(report.downloaded_bytes) << "), " << report.kept
      << " kept";
  if (report.part) out << "; part " << printable(*report.part) << " only";
  if (report.signed_by) out << "; signature verified, key fingerprint " << *report.signed_by;
  out << '\n';
  if (output.verify) {
    const VerifyReport& verify = *output.verify->report;
    for (const CheckOutcome& outcome : verify.checks.outcomes())
      if (outcome.status == CheckStatus::Fail || outcome.status == CheckStatus::Warn)
        out << (outcome.status == CheckStatus::Fail ? "FAIL " : "WARN ") << outcome.check << ' '
            << printable(outcome.subject) << ": " << printable(outcome.message) << '\n';
    const CheckTally tally = verify.tally();
    out << "verify: " << (tally.failed ? "FAILED, " + std::to_string(tally.failed) + " problem(s)" : std::string("ok"))
        << " (" << tally.total() << " checks; GPU: " << verify.gpu.description << ")\n";
  } else if (output.verify_skipped) {
    out << "verify: skipped: " << *output.verify_skipped << '\n';
  }
}

int run_pull(const PullArgs& args, Output& out) {
  PullOptions options;
  options.reference = args.reference;
  options.output_dir = args.output;
  if (!args.part.empty()) options.part = args.part;
  options.require_signature = args.trust.require_signature;
  options.registry.plain_http = args.plain_http;
  options.registry.progress = out.progress();
  auto keys = load_trusted_keys(args.trust);
  if (!keys.ok()) return out.fail(keys.error());
  options.keys = std::move(*keys);
  auto pulled = pull_bundle(options);
  if (!pulled) return out.fail(pulled.error());
  out.committed();
  PullOutput output{*pulled, std::nullopt, std::nullopt};
  if (options.part) {
    output.verify_skipped =
        "--part: DIR holds one part's files, so verify (which checks every part bundle.json lists) is not run; "
        "the files pulled were checked against bundle.json" +
        std::string(pulled->signed_by ? " and the signature" : "");
    return out.print(output);
  }
  test_kill_point("pull-verify");
  VerifyOptions verify_options;
  verify_options.gpu = args.gpu;
  verify_options.keys = options.keys;
  verify_options.require_signature = args.trust.require_signature;
  verify_options.progress = out.progress();
  // The files pull wrote are held until verify has run: their digests,
  // checked as the bytes arrived, are not computed again.
  verify_options.written = pulled->written;
  auto verified = verify_paths({args.output}, verify_options);
  if (!verified) return out.fail(verified.error());
  output.verify = VerifyVerdict{&*verified};
  return out.print(output, verified->checks.failed() ? static_cast<int>(ErrorKind::Invalid) : 0);
}

}  // namespace

Command add_pull(Cli& cli) {
  auto args = std::make_shared<PullArgs>();
  CommandLine command = cli.add_command(
      "pull",
      "Fetch a bundle pushed to an OCI registry (a CNCF ModelPack artifact) into DIR: each file's SHA-256 checked\n"
      "as it arrives, the signature checked before anything is placed, DIR changed in one transaction; then the\n"
      "checks of verify. See ptbundle-pull(1).");
  command.option("REF", args->reference, "registry[:port]/repository[:tag] (tag default: latest), or @sha256:DIGEST")
      .required();
  command.option("-o,--output", args->output, "The bundle folder to write (created if missing)").required();
  command.option("--part", args->part, "Fetch only this part's files (with bundle.json and the signature)");
  add_trust_flags(command, args->trust, "before placing");
  command.option("--gpu", args->gpu, "The GPU verify checks against: auto, a compute capability (sm_86) or none")
      .shown_default("auto");
  command.flag("--plain-http", args->plain_http,
               "Allow plain HTTP to a registry that is not on this machine (localhost and 127.0.0.1 always may)");
  command.json_flag("Print the result as one JSON document, described by schemas/pull.schema.json");
  return {command, [args](Output& out) { return run_pull(*args, out); }};
}

}  // namespace ptb::app
