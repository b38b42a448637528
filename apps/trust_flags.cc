#include "trust_flags.h"

namespace ptb::app {

void add_trust_flags(CommandLine& command, TrustArgs& args, const std::string& checked_when) {
  command.option("--key", args.keys,
                 "Public key (PEM) the bundle must be signed with (repeatable; any one of them);\nchecked " +
                     checked_when);
  command.option("--keys-dir", args.keys_dir, "Folder of public keys (*.pem, *.pub), as --key for each");
  command.flag("--require-signature", args.require_signature,
               "Refuse what is not a bundle whose signature was checked: unsigned, or signed but no\n"
               "--key/--keys-dir given to check it");
}

Result<std::vector<PublicKey>> load_trusted_keys(const TrustArgs& args) {
  std::vector<PublicKey> keys;
  for (const auto& path : args.keys) {
    PTB_TRY(PublicKey key, PublicKey::load(path));
    keys.push_back(std::move(key));
  }
  if (!args.keys_dir.empty()) {
    PTB_TRY(std::vector<PublicKey> in_dir, load_public_keys_dir(args.keys_dir));
    for (auto& key : in_dir) keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace ptb::app
