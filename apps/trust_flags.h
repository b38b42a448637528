// The flags of every command that checks a bundle's signature before it acts
// (verify, push, pull): --key, --keys-dir and --require-signature, spelled,
// explained and loaded one way.
#pragma once

#include <string>
#include <vector>

#include "cli.h"
#include "ptbundle/base/result.h"
#include "ptbundle/signing/keys.h"

namespace ptb::app {

struct TrustArgs {
  std::vector<std::string> keys;  // --key, repeatable
  std::string keys_dir;           // --keys-dir
  bool require_signature = false;
};

// `checked_when` ends --key's help: when the command checks the signature.
void add_trust_flags(CommandLine& command, TrustArgs& args, const std::string& checked_when);

// Every --key file, then every key in --keys-dir; the first that cannot be
// read or is not a supported public key is the error.
Result<std::vector<PublicKey>> load_trusted_keys(const TrustArgs& args);

}  // namespace ptb::app
