// `ptbundle push BUNDLE REF [--key K]... [--require-signature] [--mount-from
// REPO]... [--chunk-size MIB] [--plain-http] [-q] [--json]`: the bundle
// checked as verify checks it, then sent to an OCI registry as one CNCF
// ModelPack artifact. Parsing and printing only; the format, the checks and
// the protocol live in libregistry (registry/push.h).

#include <memory>
#include <ostream>

#include "command.h"
#include "trust_flags.h"
#include "ptbundle/registry/push.h"

namespace ptb {

// Text for people, beside PushReport's namespace (Output::print finds it by ADL).
void render_text(std::ostream& out, const PushReport& report) {
  for (const auto& blob : report.blobs)
    out << "  " << blob.action << (blob.action == "existing" ? "  " : " ") << printable(blob.path) << " ("
        << app::human_size(blob.size) << ")\n";
  out << "pushed " << report.reference << "@" << report.digest << ": " << report.blobs.size() << " blob(s), "
      << report.uploaded << " uploaded (" << app::human_size(report.uploaded_bytes) << "), " << report.existing
      << " already there, " << report.mounted << " mounted";
  if (report.signed_by) out << "; signature verified, key fingerprint " << *report.signed_by;
  out << '\n';
}

}  // namespace ptb

namespace ptb::app {
namespace {

struct PushArgs {
  std::string bundle;
  std::string reference;
  TrustArgs trust;
  std::vector<std::string> mount_from;
  uint64_t chunk_mib = 64;
  bool plain_http = false;
};

int run_push(const PushArgs& args, Output& out) {
  PushOptions options;
  options.bundle_dir = args.bundle;
  options.reference = args.reference;
  options.require_signature = args.trust.require_signature;
  options.mount_from = args.mount_from;
  if (args.chunk_mib == 0 || args.chunk_mib > (1u << 20)) return out.fail(usage_error("--chunk-size: expected 1 to 1048576 MiB"));
  options.chunk_bytes = args.chunk_mib << 20;
  options.registry.plain_http = args.plain_http;
  options.registry.progress = out.progress();
  auto keys = load_trusted_keys(args.trust);
  if (!keys.ok()) return out.fail(keys.error());
  options.keys = std::move(*keys);
  auto report = push_bundle(options);
  if (!report) return out.fail(report.error());
  out.committed();
  return out.print(*report);
}

}  // namespace

Command add_push(Cli& cli) {
  auto args = std::make_shared<PushArgs>();
  CommandLine command = cli.add_command(
      "push",
      "Send a bundle to an OCI registry as a CNCF ModelPack artifact, after the checks of verify (without a GPU):\n"
      "one raw layer per file under the SHA-256 bundle.json records, bundle.json and the signature as layers of\n"
      "their own. Blobs the registry has are not sent again. See ptbundle-push(1).");
  command.option("BUNDLE", args->bundle, "The bundle folder").required();
  command.option("REF", args->reference, "registry[:port]/repository[:tag] (tag default: latest), or @sha256:DIGEST")
      .required();
  add_trust_flags(command, args->trust, "before pushing");
  command.option("--mount-from", args->mount_from,
                 "Repository of the same registry to mount blobs from instead of uploading them (repeatable)")
      .one_per_use();
  command.option("--chunk-size", args->chunk_mib, "Blobs larger than this many MiB go up in chunks of it (default 64)");
  command.flag("--plain-http", args->plain_http,
               "Allow plain HTTP to a registry that is not on this machine (localhost and 127.0.0.1 always may)");
  command.json_flag("Print the result as one JSON document, described by schemas/push.schema.json");
  return {command, [args](Output& out) { return run_push(*args, out); }};
}

}  // namespace ptb::app
