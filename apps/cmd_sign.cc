// `ptbundle sign BUNDLE --key KEY.pem [--password-file F] [--output NAME] [--json]`:
// a signature over every file of the bundle, in the OpenSSF model-signing
// format, written into the bundle. Parsing and printing only; the format and
// the rules live in libbundle (signing/sign_bundle.h).
#include <iostream>

#include "command.h"
#include "ptbundle/signing/sign_bundle.h"

namespace ptb::app {
namespace {

// The version of the --json document (schemas/sign.schema.json).
constexpr int kSignFormatVersion = 1;

struct SignArgs {
  std::string bundle;
  std::string key;
  std::string password_file;
  std::string output = kDefaultSignatureName;
  bool json = false;
};

Json report_json(const SignReport& report) {
  Json files = Json::array();
  for (const auto& resource : report.statement.resources) files.push_back({{"path", resource.name}, {"sha256", resource.sha256}});
  return {{"format_version", kSignFormatVersion},
          {"signature", report.signature_path},
          {"format", "model_signing"},
          {"media_type", kSigstoreBundleMediaType},
          {"predicate_type", kModelSigningPredicateType},
          {"key_fingerprint", report.key_fingerprint},
          {"curve", report.curve},
          {"hash", report.hash},
          {"subject", {{"name", report.statement.subject_name}, {"sha256", report.statement.subject_sha256}}},
          {"ignore_paths", report.statement.ignore_paths},
          {"bytes", report.bytes},
          {"files", files}};
}

int run_sign(const SignArgs& args) {
  SignOptions options;
  options.bundle_dir = args.bundle;
  options.key_path = args.key;
  if (!args.password_file.empty()) options.password_file = args.password_file;
  options.output_name = args.output;
  auto result = sign_bundle(options);
  if (!result) return report(result.error());
  if (args.json) {
    print_json(report_json(*result));
  } else {
    std::cout << "signed " << result->statement.resources.size() << " file(s), " << human_size(result->bytes) << ", into "
              << result->signature_path << "\n  key: ECDSA " << result->curve << " with " << result->hash
              << ", fingerprint " << result->key_fingerprint << "\n  subject: " << printable(result->statement.subject_name)
              << " sha256:" << result->statement.subject_sha256 << '\n';
  }
  std::cout.flush();
  if (!std::cout) return report(io_error("stdout: cannot write the report"));
  return 0;
}

}  // namespace

Action add_sign(CLI::App& root) {
  auto args = std::make_shared<SignArgs>();
  CLI::App* command = root.add_subcommand(
      "sign",
      "Sign every file of a bundle folder with an elliptic-curve key (P-256, P-384, P-521), writing the\n"
      "signature into the bundle in the OpenSSF model-signing format, which `ptbundle verify --key` and\n"
      "`model_signing verify key` check. See ptbundle-sign(1).");
  command->add_option("BUNDLE", args->bundle, "The bundle folder")->required();
  command->add_option("--key", args->key, "PEM private key (openssl ecparam -name prime256v1 -genkey -noout)")->required();
  command->add_option("--password-file", args->password_file, "File whose first line is the password of an encrypted key");
  command->add_option("--output", args->output, "Name of the signature file inside the bundle (default bundle.sig)");
  command->add_flag("--json", args->json, "Print the result as one JSON document, described by schemas/sign.schema.json");
  return [args] { return run_sign(*args); };
}

}  // namespace ptb::app
