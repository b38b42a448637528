// `ptbundle sign BUNDLE --key KEY.pem [--password-file F] [--output NAME] [--json]`:
// a signature over every file of the bundle, in the OpenSSF model-signing
// format, written into the bundle. Parsing and printing only; the format and
// the rules live in libbundle (signing/sign_bundle.h).
#include <memory>
#include <ostream>

#include "command.h"
#include "ptbundle/signing/sign_bundle.h"

namespace ptb::app {
namespace {

struct SignArgs {
  std::string bundle;
  std::string key;
  std::string password_file;
  std::string output = kDefaultSignatureName;
};

// The model: schemas/sign.schema.json.
struct SignedFileModel {
  std::string path;
  std::string sha256;
  template <class F>
  void fields(F& f) const {
    f("path", path)("sha256", sha256);
  }
};

struct SubjectModel {
  std::string name;
  std::string sha256;
  template <class F>
  void fields(F& f) const {
    f("name", name)("sha256", sha256);
  }
};

struct SignModel {
  std::string signature;
  std::string key_fingerprint;
  std::string curve;
  std::string hash;
  SubjectModel subject;
  std::vector<std::string> ignore_paths;
  uint64_t bytes = 0;
  std::vector<SignedFileModel> files;
  template <class F>
  void fields(F& f) const {
    f("signature", signature)("format", std::string("model_signing"))("media_type", std::string(kSigstoreBundleMediaType))(
        "predicate_type", std::string(kModelSigningPredicateType))("key_fingerprint", key_fingerprint)("curve", curve)(
        "hash", hash)("subject", subject)("ignore_paths", ignore_paths)("bytes", bytes)("files", files);
  }
};

SignModel model_of(const SignReport& report) {
  SignModel model;
  model.signature = report.signature_path;
  model.key_fingerprint = report.key_fingerprint;
  model.curve = report.curve;
  model.hash = report.hash;
  model.subject = {report.statement.subject_name, report.statement.subject_sha256};
  model.ignore_paths = report.statement.ignore_paths;
  model.bytes = report.bytes;
  for (const auto& resource : report.statement.resources) model.files.push_back({resource.name, resource.sha256});
  return model;
}

void render_text(std::ostream& out, const SignModel& model) {
  out << "signed " << model.files.size() << " file(s), " << human_size(model.bytes) << ", into " << model.signature
      << "\n  key: ECDSA " << model.curve << " with " << model.hash << ", fingerprint " << model.key_fingerprint
      << "\n  subject: " << printable(model.subject.name) << " sha256:" << model.subject.sha256 << '\n';
}

int run_sign(const SignArgs& args, Output& out) {
  SignOptions options;
  options.bundle_dir = args.bundle;
  options.key_path = args.key;
  if (!args.password_file.empty()) options.password_file = args.password_file;
  options.output_name = args.output;
  auto result = sign_bundle(options);
  if (!result) return out.fail(result.error());
  out.committed();
  return out.print(model_of(*result));
}

}  // namespace

Command add_sign(CLI::App& root) {
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
  add_json_flag(command, "Print the result as one JSON document, described by schemas/sign.schema.json");
  return {command, [args](Output& out) { return run_sign(*args, out); }};
}

}  // namespace ptb::app
