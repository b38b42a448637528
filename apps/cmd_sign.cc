// `ptbundle sign BUNDLE --key KEY.pem [--password-file F] [--output NAME] [--json]`:
// a signature over every file of the bundle, in the OpenSSF model-signing
// format, written into the bundle. Parsing and printing only; the format and
// the rules live in libbundle (signing/sign_bundle.h).
#include <memory>
#include <ostream>

#include "command.h"
#include "ptbundle/signing/sign_bundle.h"

namespace ptb {

// Text for people. Beside SignReport's namespace, not in ptb::app, so that
// Output::print finds it by argument-dependent lookup as it finds a model's.
void render_text(std::ostream& out, const SignReport& report) {
  out << "signed " << report.statement.resources.size() << " file(s), " << app::human_size(report.bytes) << ", into "
      << report.signature_path << "\n  key: ECDSA " << report.curve << " with " << report.hash << ", fingerprint "
      << report.key_fingerprint << "\n  subject: " << printable(report.statement.subject_name)
      << " sha256:" << report.statement.subject_sha256 << '\n';
}

}  // namespace ptb

namespace ptb::app {
namespace {

struct SignArgs {
  std::string bundle;
  std::string key;
  std::string password_file;
  std::string output = kDefaultSignatureName;
};

int run_sign(const SignArgs& args, Output& out) {
  SignOptions options;
  options.bundle_dir = args.bundle;
  options.key_path = args.key;
  if (!args.password_file.empty()) options.password_file = args.password_file;
  options.output_name = args.output;
  options.progress = out.progress();
  auto result = sign_bundle(options);
  if (!result) return out.fail(result.error());
  out.committed();
  return out.print(*result);
}

}  // namespace

Command add_sign(Cli& cli) {
  auto args = std::make_shared<SignArgs>();
  CommandLine command = cli.add_command(
      "sign",
      "Sign every file of a bundle folder with an elliptic-curve key (P-256, P-384, P-521), writing the\n"
      "signature into the bundle in the OpenSSF model-signing format, which `ptbundle verify --key` and\n"
      "`model_signing verify key` check. See ptbundle-sign(1).");
  command.option("BUNDLE", args->bundle, "The bundle folder").required();
  command.option("--key", args->key, "PEM private key (openssl ecparam -name prime256v1 -genkey -noout)").required();
  command.option("--password-file", args->password_file, "File whose first line is the password of an encrypted key");
  command.option("--output", args->output, "Name of the signature file inside the bundle (default bundle.sig)");
  command.json_flag("Print the result as one JSON document, described by schemas/sign.schema.json");
  return {command, [args](Output& out) { return run_sign(*args, out); }};
}

}  // namespace ptb::app
