// ptbundle sign and verify --key: bundles made from ExecuTorch's own export
// (../shared/fixtures/cuda/named_sm90) signed and verified; each tampering
// refused with the file named; signatures exchanged with an independent
// implementation of the model-signing format (tests/model_signing_reference.py,
// Python's cryptography) in both directions; key types model_signing refuses
// refused; encrypted keys; hostile signature files; writers removing the
// signature they made invalid; the parallel hashing against plain SHA-256.
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <openssl/pem.h>

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/export/export.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/signing/model_signature.h"
#include "ptbundle/signing/sign_bundle.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::flip_byte;
using ptb::test::rewrite_manifest_digests;
using ptb::test::quote;
using ptb::test::schema_problem;
using ptb::test::run_cli;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {


// Keys made with OpenSSL's own API (not ptbundle's loader): "EC" with a
// curve, "RSA", "ED25519". With a password, the PEM is encrypted (AES-256).
void write_key(const fs::path& private_path, const fs::path& public_path, const char* type, const char* curve = nullptr,
               const char* password = nullptr) {
  EVP_PKEY* key = curve ? EVP_PKEY_Q_keygen(nullptr, nullptr, type, curve)
                        : std::string(type) == "RSA" ? EVP_PKEY_Q_keygen(nullptr, nullptr, type, size_t{2048})
                                                     : EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  REQUIRE(key != nullptr);
  FILE* out = std::fopen(private_path.c_str(), "w");
  REQUIRE(out);
  const EVP_CIPHER* cipher = password ? EVP_aes_256_cbc() : nullptr;
  REQUIRE(PEM_write_PrivateKey(out, key, cipher, nullptr, 0, nullptr, const_cast<char*>(password)) == 1);
  std::fclose(out);
  out = std::fopen(public_path.c_str(), "w");
  REQUIRE(out);
  REQUIRE(PEM_write_PUBKEY(out, key) == 1);
  std::fclose(out);
  EVP_PKEY_free(key);
}

struct Keys {
  TempDir dir;
  fs::path key = dir / "key.pem", pub = dir / "pub.pem";
  fs::path other_key = dir / "other.pem", other_pub = dir / "other_pub.pem";
  Keys() {
    write_key(key, pub, "EC", "P-256");
    write_key(other_key, other_pub, "EC", "P-256");
  }
};

// Part `encoder` exported from ExecuTorch's named_sm90 export.
void make_bundle(const fs::path& dir) {
  ExportOptions options;
  options.output_dir = dir.string();
  PartRequest part;
  part.name = "encoder";
  part.program = fixture("cuda/named_sm90/model.pte").string();
  part.data_file = fixture("cuda/named_sm90/encoder.ptd").string();
  options.parts.push_back(part);
  options.tool_version = "test";
  auto exported = export_parts(options);
  REQUIRE_MESSAGE(exported.ok(), exported.error().message);
}

SignReport sign(const fs::path& bundle, const fs::path& key) {
  SignOptions options;
  options.bundle_dir = bundle.string();
  options.key_path = key.string();
  auto report = sign_bundle(options);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  return std::move(report).value();
}

VerifyReport verify(const fs::path& bundle, const std::vector<fs::path>& keys = {}) {
  VerifyOptions options;
  options.gpu = "none";
  options.driver_library = "/nonexistent/libcuda.so.1";
  for (const auto& path : keys) {
    auto key = PublicKey::load(path.string());
    REQUIRE_MESSAGE(key.ok(), key.error().message);
    options.keys.push_back(std::move(*key));
  }
  auto report = verify_paths({bundle.string()}, options);
  REQUIRE(report.ok());
  return std::move(report).value();
}

std::string failures(const VerifyReport& report) {
  std::string text;
  for (const auto& o : report.checks.outcomes()) {
    if (o.status == CheckStatus::Fail) text += o.check + " " + o.subject + ": " + o.message + "\n";
  }
  return text;
}

const CheckOutcome* outcome(const VerifyReport& report, const std::string& check, CheckStatus status) {
  for (const auto& o : report.checks.outcomes()) {
    if (o.check == check && o.status == status) return &o;
  }
  return nullptr;
}

std::string read_file(const fs::path& path) { return ptb::test::read_text(path); }
void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool have_python_cryptography() {
  return std::system("python3 -c 'import cryptography.hazmat.primitives.asymmetric.ec' >/dev/null 2>&1") == 0;
}

std::string reference(const std::string& verb, const fs::path& key, const fs::path& bundle, std::string* err = nullptr) {
  TempDir scratch;
  const std::string command = "python3 " + quote(fs::path(PTB_SOURCE_DIR) / "tests/model_signing_reference.py") + " " + verb +
                              " " + quote(key) + " " + quote(bundle) + " bundle.sig 2>" + quote(scratch / "err");
  const int status = std::system(command.c_str());
  if (err) *err = read_file(scratch / "err");
  return std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

}  // namespace

TEST_CASE("sign: the order, the ignore rule and the content keys the format and ExecuTorch define") {
  // Python's PurePosixPath order: by components, so "a/b" before "a.b".
  CHECK(signing_order_less("a/b", "a.b"));
  CHECK(signing_order_less("a", "a/b"));
  CHECK_FALSE(signing_order_less("a/b", "a"));
  CHECK(signing_order_less("B", "a"));
  CHECK_FALSE(signing_order_less("x", "x"));
  CHECK(path_is_under(".git/config", ".git"));
  CHECK(path_is_under(".git", ".git"));
  CHECK_FALSE(path_is_under(".gitx", ".git"));
  CHECK(is_content_addressed_key(std::string(64, 'a') + "_so_blob"));
  CHECK(is_content_addressed_key(std::string(64, '0') + "_weights_blob"));
  CHECK_FALSE(is_content_addressed_key(std::string(64, 'A') + "_so_blob"));
  CHECK_FALSE(is_content_addressed_key(std::string(63, 'a') + "_so_blob"));
  CHECK_FALSE(is_content_addressed_key("cuda_fqn_weight:cuda:layer.weight"));

  std::vector<uint8_t> bytes;
  for (int n = 0; n < 40; ++n) {
    const std::string text = base64_encode(Bytes(bytes.data(), bytes.size()));
    auto back = base64_decode(text, "x");
    REQUIRE(back.ok());
    CHECK(*back == bytes);
    bytes.push_back(static_cast<uint8_t>(n * 37 + 1));
  }
  CHECK(base64_encode(Bytes(reinterpret_cast<const uint8_t*>("foob"), 4)) == "Zm9vYg==");
  CHECK_FALSE(base64_decode("Zm9v!mFy", "x").ok());
  CHECK_FALSE(base64_decode("Zm9vY", "x").ok());
  CHECK_FALSE(base64_decode("Zh==", "x").ok());  // bits that encode nothing
  CHECK(contains(base64_decode("Zm9v YmFy", "p: dsseEnvelope.payload").error().message, "p: dsseEnvelope.payload: invalid base64"));
  // DSSE's pre-authentication encoding.
  const std::string payload = "{}";
  const auto pae = dsse_pae(Bytes(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
  CHECK(std::string(pae.begin(), pae.end()) == "DSSEv1 28 application/vnd.in-toto+json 2 {}");
}

TEST_CASE("sign: ExecuTorch's content-addressed keys are found and hashed as dump.json records them") {
  PTB_REQUIRE_FIXTURES();
  const auto dump = nlohmann::json::parse(read_file(fixture("cuda/sm80/dump.json")));
  auto keys = content_keys_of(fixture("cuda/sm80/model.pte").string());
  REQUIRE(keys.size() == 1);
  CHECK(keys[0].key == dump["pte"]["program"]["named_data"][0]["key"].get<std::string>());
  const auto& segment = dump["pte"]["program"]["segments"][2];
  CHECK(keys[0].offset == segment["file_offset"].get<uint64_t>());
  CHECK(keys[0].size == segment["size"].get<uint64_t>());

  TempDir dir;
  fs::copy_file(fixture("cuda/sm80/model.pte"), dir / "model.pte");
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), dir / "aoti_cuda_blob.ptd");
  auto digests = hash_folder(dir.path().string());
  REQUIRE(digests.ok());
  REQUIRE(digests->files.size() == 2);
  for (const auto& file : digests->files) {
    CHECK(file.sha256 == *sha256_file((dir / file.path).string()));
  }
  const FileDigest* pte = digests->find("model.pte");
  REQUIRE(pte);
  REQUIRE(pte->content_keys.size() == 1);
  CHECK(pte->content_keys[0].matches());
  CHECK(pte->content_keys[0].actual == segment["sha256"].get<std::string>());
}

TEST_CASE("sign: large files and large blobs hash as plain SHA-256 does, on every thread count") {
  // A data file whose content-addressed blob (24 MiB) is hashed by the second thread.
  TempDir dir;
  std::vector<uint8_t> blob(24u << 20);
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  const std::string key = to_hex(sha256(Bytes(blob.data(), blob.size()))) + "_weights_blob";
  std::vector<uint8_t> wrong(3000, 7);
  const std::string wrong_key = std::string(64, 'c') + "_so_blob";
  PtdContents contents;
  contents.add(key, SegmentSource::memory(Bytes(blob.data(), blob.size())), std::nullopt);
  contents.add(wrong_key, SegmentSource::memory(Bytes(wrong.data(), wrong.size())), std::nullopt);
  REQUIRE(write_ptd_file((dir / "big.ptd").string(), contents).ok());
  fs::create_directories(dir / "sub");
  write_text(dir / "sub" / "empty", "");
  write_text(dir / "small", "small");
  for (unsigned threads : {1u, 2u, 8u}) {
    FolderHashOptions options;
    options.threads = threads;
    auto digests = hash_folder(dir.path().string(), options);
    REQUIRE(digests.ok());
    REQUIRE(digests->files.size() == 3);
    for (const auto& file : digests->files) CHECK(file.sha256 == *sha256_file((dir / file.path).string()));
    const FileDigest* ptd = digests->find("big.ptd");
    REQUIRE(ptd);
    REQUIRE(ptd->content_keys.size() == 2);
    for (const auto& k : ptd->content_keys) CHECK(k.matches() == (k.key == key));
  }
}

TEST_CASE("sign: a signed bundle verifies with its key, and the CLI says who signed it") {
  PTB_REQUIRE_FIXTURES();
  Keys keys;
  TempDir dir;
  const fs::path bundle = dir / "robot_model";
  make_bundle(bundle);
  SignReport signed_report = sign(bundle, keys.key);
  CHECK(signed_report.curve == "P-256");
  CHECK(signed_report.statement.subject_name == "robot_model");
  CHECK(signed_report.statement.resources.size() == 3);  // bundle.json, encoder.pte, encoder.ptd
  CHECK(fs::exists(bundle / "bundle.sig"));

  VerifyReport report = verify(bundle, {keys.pub});
  CHECK_MESSAGE(!report.checks.failed(), failures(report));
  REQUIRE(outcome(report, checks::kSignature, CheckStatus::Pass));
  REQUIRE(outcome(report, checks::kSignedFiles, CheckStatus::Pass));
  REQUIRE(outcome(report, checks::kContentKey, CheckStatus::Pass));
  // The signature is checked first.
  CHECK(report.checks.outcomes()[1].check == checks::kSignature);
  REQUIRE(report.signatures.size() == 1);
  CHECK(report.signatures[0].verified);

  // Without a key: signed, by which key, not checked.
  VerifyReport unkeyed = verify(bundle);
  CHECK(!unkeyed.checks.failed());
  const CheckOutcome* skipped = outcome(unkeyed, checks::kSignature, CheckStatus::Skip);
  REQUIRE(skipped);
  CHECK(contains(skipped->message, signed_report.key_fingerprint));

  auto cli = run_cli("verify --gpu none --key " + quote(keys.pub) + " " + quote(bundle));
  CHECK_MESSAGE(cli.exit_code == 0, (cli.out + cli.err));
  CHECK(contains(cli.out, "verified with"));
  auto text = run_cli("verify --gpu none " + quote(bundle));
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, signed_report.key_fingerprint));
  // The fingerprint is the SHA-256 of the public key's PEM, as documented.
  CHECK(signed_report.key_fingerprint == *sha256_file(keys.pub.string()));

  // A key directory (public keys only: a private key there is refused); and a
  // key given for an unsigned bundle fails.
  TempDir trusted;
  fs::copy_file(keys.other_pub, trusted / "a.pem");
  fs::copy_file(keys.pub, trusted / "b.pub");
  auto from_dir = run_cli("verify --gpu none --keys-dir " + quote(trusted.path()) + " " + quote(bundle));
  CHECK_MESSAGE(from_dir.exit_code == 0, (from_dir.out + from_dir.err));
  auto mixed = run_cli("verify --gpu none --keys-dir " + quote(keys.dir.path()) + " " + quote(bundle));
  CHECK(mixed.exit_code == 1);
  CHECK(contains(mixed.err, "is a private key"));
  fs::remove(bundle / "bundle.sig");
  VerifyReport unsigned_report = verify(bundle, {keys.pub});
  const CheckOutcome* unsigned_fail = outcome(unsigned_report, checks::kSignature, CheckStatus::Fail);
  REQUIRE(unsigned_fail);
  CHECK(contains(unsigned_fail->message, "not signed"));
}

TEST_CASE("sign: each tampering is refused, naming the file") {
  PTB_REQUIRE_FIXTURES();
  Keys keys;
  auto signed_bundle = [&](const fs::path& dir) {
    make_bundle(dir);
    sign(dir, keys.key);
  };
  auto fails_with = [&](const fs::path& bundle, const std::string& check, const std::string& subject, const std::string& text,
                        const fs::path& key) {
    VerifyReport report = verify(bundle, {key});
    bool found = false;
    for (const auto& o : report.checks.outcomes()) {
      if (o.status == CheckStatus::Fail && o.check == check && contains(o.subject, subject) && contains(o.message, text)) found = true;
    }
    CHECK_MESSAGE(found, ("expected " + check + " failure on " + subject + " saying '" + text + "'; got:\n" + failures(report)));
  };

  SUBCASE("a byte of a weight, with bundle.json rewritten to match") {
    TempDir dir;
    signed_bundle(dir.path());
    auto ptd = PtdFile::open((dir / "encoder.ptd").string());
    REQUIRE(ptd.ok());
    const uint64_t at = ptd->entries().front().file_offset;
    flip_byte(dir / "encoder.ptd", at);
    rewrite_manifest_digests(dir.path());
    // The manifest alone is satisfied; only the signature catches it.
    VerifyReport unkeyed = verify(dir.path());
    CHECK_MESSAGE(!unkeyed.checks.failed(), failures(unkeyed));
    fails_with(dir.path(), checks::kSignedFiles, "encoder.ptd", "the file changed after signing", keys.pub);
    fails_with(dir.path(), checks::kSignedFiles, "bundle.json", "the file changed after signing", keys.pub);
  }
  SUBCASE("a file added") {
    TempDir dir;
    signed_bundle(dir.path());
    write_text(dir / "extra.bin", "x");
    fails_with(dir.path(), checks::kSignedFiles, "extra.bin", "the file was added or renamed after signing", keys.pub);
  }
  SUBCASE("a file removed") {
    TempDir dir;
    signed_bundle(dir.path());
    fs::remove(dir / "encoder.ptd");
    fails_with(dir.path(), checks::kSignedFiles, "encoder.ptd", "missing", keys.pub);
  }
  SUBCASE("a file renamed") {
    TempDir dir;
    signed_bundle(dir.path());
    fs::rename(dir / "encoder.ptd", dir / "decoder.ptd");
    fails_with(dir.path(), checks::kSignedFiles, "decoder.ptd", "the file was added or renamed after signing", keys.pub);
    fails_with(dir.path(), checks::kSignedFiles, "encoder.ptd", "missing", keys.pub);
  }
  SUBCASE("the signature's payload edited") {
    TempDir dir;
    signed_bundle(dir.path());
    auto json = nlohmann::ordered_json::parse(read_file(dir / "bundle.sig"));
    auto payload = base64_decode(json["dsseEnvelope"]["payload"].get<std::string>(), "test");
    REQUIRE(payload.ok());
    std::string text(payload->begin(), payload->end());
    const size_t at = text.find("encoder.ptd");
    REQUIRE(at != std::string::npos);
    text.replace(at, 7, "decoder");
    json["dsseEnvelope"]["payload"] = base64_encode(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    write_text(dir / "bundle.sig", json.dump());
    fails_with(dir.path(), checks::kSignature, "bundle.sig", "does not verify", keys.pub);
  }
  SUBCASE("another key") {
    TempDir dir;
    signed_bundle(dir.path());
    fails_with(dir.path(), checks::kSignature, "bundle.sig", "signed by the key with fingerprint", keys.other_pub);
    // The hint removed: the signature itself decides.
    auto json = nlohmann::ordered_json::parse(read_file(dir / "bundle.sig"));
    json["verificationMaterial"]["publicKey"].erase("hint");
    write_text(dir / "bundle.sig", json.dump());
    fails_with(dir.path(), checks::kSignature, "bundle.sig", "verifies with none of the keys", keys.other_pub);
  }
  SUBCASE("a library swapped under its old content-addressed key, bundle.json rewritten, no signature") {
    TempDir dir;
    make_bundle(dir.path());
    auto keys_in = content_keys_of((dir / "encoder.pte").string());
    REQUIRE(keys_in.size() == 1);
    flip_byte(dir / "encoder.pte", keys_in[0].offset + keys_in[0].size / 2);
    rewrite_manifest_digests(dir.path());
    VerifyReport report = verify(dir.path());
    const CheckOutcome* failed = outcome(report, checks::kContentKey, CheckStatus::Fail);
    REQUIRE_MESSAGE(failed, failures(report));
    CHECK(contains(failed->subject, "encoder.pte"));
    CHECK(contains(failed->subject, keys_in[0].key));
    CHECK(contains(failed->message, "replaced after export"));
    // Signing such a bundle is refused.
    SignOptions options;
    options.bundle_dir = dir.path().string();
    options.key_path = keys.key.string();
    auto refused = sign_bundle(options);
    REQUIRE_FALSE(refused.ok());
    CHECK(contains(refused.error().message, keys_in[0].key));
  }
}

TEST_CASE("sign: signatures are exchanged with an independent implementation of the format") {
  PTB_REQUIRE_FIXTURES();
  if (!have_python_cryptography()) {
    ptb::test::skip("python3 with the cryptography module is not installed (Debian: python3-cryptography)");
    return;
  }
  for (const char* curve : {"P-256", "P-384", "P-521"}) {
    CAPTURE(curve);
    TempDir dir;
    const fs::path key = dir / "k.pem", pub = dir / "p.pem";
    write_key(key, pub, "EC", curve);
    const fs::path ours = dir / "ours", theirs = dir / "theirs";
    make_bundle(ours);
    make_bundle(theirs);
    fs::create_directories(theirs / ".git");
    write_text(theirs / ".git" / "HEAD", "ref");  // ignored by both

    sign(ours, key);
    std::string err;
    CHECK_MESSAGE(reference("verify", pub, ours, &err) == "0", err);
    CHECK_MESSAGE(reference("sign", key, theirs, &err) == "0", err);
    VerifyReport report = verify(theirs, {pub});
    CHECK_MESSAGE(!report.checks.failed(), failures(report));
    CHECK(outcome(report, checks::kSignedFiles, CheckStatus::Pass));

    // Both refuse a changed file.
    write_text(ours / "encoder.ptd", "changed");
    write_text(theirs / "encoder.ptd", "changed");
    CHECK(reference("verify", pub, ours) == "1");
    CHECK(verify(theirs, {pub}).checks.failed());
  }
}

TEST_CASE("sign: key types and curves model_signing refuses are refused; encrypted keys need their password") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_bundle(dir / "b");
  auto sign_with = [&](const fs::path& key, const std::optional<fs::path>& password = std::nullopt) {
    SignOptions options;
    options.bundle_dir = (dir / "b").string();
    options.key_path = key.string();
    if (password) options.password_file = password->string();
    return sign_bundle(options);
  };
  struct Refused {
    const char* type;
    const char* curve;
    const char* says;
  };
  for (const Refused& refused : {Refused{"RSA", nullptr, "RSA key"}, Refused{"ED25519", nullptr, "Ed25519 key"},
                                 Refused{"EC", "P-192", "curve prime192v1"}, Refused{"EC", "secp256k1", "curve secp256k1"}}) {
    CAPTURE(refused.says);
    const fs::path key = dir / "bad.pem", pub = dir / "bad_pub.pem";
    write_key(key, pub, refused.type, refused.curve);
    auto result = sign_with(key);
    REQUIRE_FALSE(result.ok());
    CHECK(contains(result.error().message, refused.says));
    CHECK(contains(result.error().message, "P-256, P-384 or P-521"));
    auto as_public = PublicKey::load(pub.string());
    REQUIRE_FALSE(as_public.ok());
    CHECK(contains(as_public.error().message, refused.says));
    auto cli = run_cli("verify --gpu none --key " + quote(pub) + " " + quote(dir / "b"));
    CHECK(cli.exit_code == 1);
    CHECK(contains(cli.err, refused.says));
  }
  // A private key where a public one is expected.
  const fs::path key = dir / "enc.pem", pub = dir / "enc_pub.pem";
  write_key(key, pub, "EC", "P-384", "correct horse");
  CHECK(contains(PublicKey::load(key.string()).error().message, "is a private key"));

  auto no_password = sign_with(key);
  REQUIRE_FALSE(no_password.ok());
  CHECK(no_password.error().kind == ErrorKind::Usage);
  CHECK(contains(no_password.error().message, "--password-file"));
  write_text(dir / "wrong", "battery staple\n");
  auto wrong = sign_with(key, dir / "wrong");
  REQUIRE_FALSE(wrong.ok());
  CHECK(contains(wrong.error().message, "wrong password"));
  write_text(dir / "right", "correct horse\n");
  auto right = sign_with(key, dir / "right");
  REQUIRE_MESSAGE(right.ok(), right.error().message);
  CHECK(right->curve == "P-384");
  CHECK(right->hash == "SHA-384");
  CHECK(!verify(dir / "b", {pub}).checks.failed());
}

TEST_CASE("sign: hostile signature files are refused with a message, never a crash") {
  PTB_REQUIRE_FIXTURES();
  Keys keys;
  TempDir dir;
  make_bundle(dir.path());
  sign(dir.path(), keys.key);
  const std::string good = read_file(dir / "bundle.sig");
  auto refused = [&](const std::string& content, const std::string& says) {
    write_text(dir / "bundle.sig", content);
    auto parsed = read_signature_file((dir / "bundle.sig").string());
    std::string message = parsed.ok() ? parsed->statement_error : parsed.error().message;
    CHECK_MESSAGE(contains(message, says), message);
    VerifyReport report = verify(dir.path(), {keys.pub});
    CHECK(report.checks.failed());
  };
  std::string huge = std::string(kSigstoreBundleMediaType) + std::string(kMaxSignatureFileBytes, ' ');
  refused("{\"mediaType\": \"" + huge + "\"}", "under 1 MiB");
  refused(std::string(100000, '[') + kSigstoreBundleMediaType + std::string(100000, ']'), "nested more than 64 levels deep");
  refused(std::string("{\"mediaType\": \"") + kSigstoreBundleMediaType + "\"", "not valid JSON");

  auto edited = [&](const std::function<void(nlohmann::ordered_json&)>& edit) {
    auto json = nlohmann::ordered_json::parse(good);
    edit(json);
    return json.dump();
  };
  refused(edited([](auto& j) { j["dsseEnvelope"]["payload"] = "not base64!"; }), "invalid base64");
  refused(edited([](auto& j) { j["dsseEnvelope"]["signatures"] = 7; }), "dsseEnvelope.signatures: is number");
  refused(edited([](auto& j) { j["dsseEnvelope"]["signatures"][0]["sig"] = nullptr; }), "sig: is null");
  refused(edited([](auto& j) { j["dsseEnvelope"]["payloadType"] = "text/plain"; }), "payloadType");
  refused(edited([](auto& j) { j["mediaType"] = "application/json"; }), "mediaType");
  refused(edited([](auto& j) { j["verificationMaterial"] = "x"; }), "verificationMaterial: is string");
  // A statement that is not one: reported once the signature is judged.
  auto payload_of = [](const std::string& text) {
    return base64_encode(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  };
  refused(edited([&](auto& j) { j["dsseEnvelope"]["payload"] = payload_of("{\"_type\": 3}"); }), "_type: is number");
  refused(edited([&](auto& j) { j["dsseEnvelope"]["payload"] = payload_of(std::string(70, '[')); }), "nested more than 64 levels deep");
}

TEST_CASE("sign: a writer that changes a signed bundle removes the signature and says so") {
  PTB_REQUIRE_FIXTURES();
  Keys keys;
  TempDir dir;
  const fs::path bundle = dir / "b";
  make_bundle(bundle);
  sign(bundle, keys.key);
  auto exported = run_cli("export --json -o " + quote(bundle) + " --part decoder=" +
                          quote(fixture("cuda/named_sm90/model.pte").string() + "," + fixture("cuda/named_sm90/encoder.ptd").string()));
  REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
  CHECK(!fs::exists(bundle / "bundle.sig"));
  CHECK(contains(exported.err, "removed the signature"));
  CHECK(nlohmann::json::parse(exported.out)["removed_signatures"].size() == 1);
  CHECK(!verify(bundle).checks.failed());

  // merge writing its output into a signed bundle.
  sign(bundle, keys.key);
  auto merged = run_cli("merge --json -o " + quote(bundle / "decoder.pte") + " --output-data " + quote(bundle / "decoder.ptd") + " " +
                        quote(fixture("cuda/sm80/model.pte").string() + "," + fixture("cuda/sm80/aoti_cuda_blob.ptd").string()) + " " +
                        quote(fixture("cuda/sm90/model.pte").string() + "," + fixture("cuda/sm90/aoti_cuda_blob.ptd").string()));
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  CHECK(!fs::exists(bundle / "bundle.sig"));
  CHECK(contains(merged.err, "removed the signature"));
}

TEST_CASE("sign: inspect shows the signature's statement; sign --json and verify --json follow their schemas") {
  PTB_REQUIRE_FIXTURES();
  Keys keys;
  TempDir dir;
  const fs::path bundle = dir / "b";
  make_bundle(bundle);
  auto signed_cli = run_cli("sign --json --key " + quote(keys.key) + " " + quote(bundle));
  REQUIRE_MESSAGE(signed_cli.exit_code == 0, signed_cli.err);
  const auto document = nlohmann::json::parse(signed_cli.out);
  CHECK(document["format_version"] == 1);
  CHECK(document["files"].size() == 3);

  auto inspected = run_cli("inspect " + quote(bundle / "bundle.sig"));
  REQUIRE_MESSAGE(inspected.exit_code == 0, inspected.err);
  CHECK(contains(inspected.out, "https://model_signing/signature/v1.0"));
  CHECK(contains(inspected.out, "encoder.ptd"));
  auto folder = run_cli("inspect --json " + quote(bundle));
  REQUIRE_MESSAGE(folder.exit_code == 0, folder.err);
  const auto inspect_json = nlohmann::json::parse(folder.out);
  CHECK(inspect_json["files"][0]["signature"]["statement"]["predicate_type"] == kModelSigningPredicateType);
  CHECK(inspect_json["files"][0]["signature"]["statement"]["resources"].size() >= 2);
  auto folder_text = run_cli("inspect " + quote(bundle));
  CHECK(contains(folder_text.out, "Signature: bundle.sig"));

  auto verified = run_cli("verify --json --gpu none --key " + quote(keys.pub) + " " + quote(bundle));
  CHECK(verified.exit_code == 0);
  CHECK(nlohmann::json::parse(verified.out)["paths"][0]["signature"]["verified"] == true);

  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
    ptb::test::skip("python3 with the jsonschema module is not installed");
    return;
  }
  for (const auto& [schema, text] : {std::pair{"sign", signed_cli.out}, std::pair{"verify", verified.out},
                                     std::pair{"inspect", folder.out}}) {
    CAPTURE(schema);
    CHECK(schema_problem(schema, text) == "");
  }
}

TEST_CASE("hash_open_file_copying: the copy gets every byte once, and the digests are of those bytes") {
  TempDir dir;
  // 3 MiB with a small blob (hashed by the reading thread) and 40 MiB with a
  // 20 MiB blob (hashed by a second thread, which then copies).
  for (uint64_t size : {uint64_t{3} << 20, uint64_t{40} << 20}) {
    CAPTURE(size);
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    uint64_t state = 0x9e3779b97f4a7c15ull + size;
    for (auto& b : bytes) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      b = static_cast<uint8_t>(state);
    }
    const fs::path path = dir / ("file" + std::to_string(size));
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    const uint64_t blob_offset = 4096 + 7, blob_size = size / 2;
    const Bytes blob(bytes.data() + blob_offset, static_cast<size_t>(blob_size));
    ContentKeyDigest key;
    key.key = to_hex(sha256(blob)) + "_weights_blob";
    key.where = "data file entry";
    key.offset = blob_offset;
    key.size = blob_size;
    key.expected = key.key.substr(0, 64);

    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    FileDigest digest;
    digest.content_keys = {key};
    std::vector<uint8_t> copied;
    hash_open_file_copying(fd, digest, [&](Bytes chunk) {
      copied.insert(copied.end(), chunk.begin(), chunk.end());
      return std::string();
    });
    CHECK(digest.error.empty());
    CHECK(copied == bytes);
    CHECK(digest.size == size);
    CHECK(digest.sha256 == to_hex(sha256(Bytes(bytes.data(), bytes.size()))));
    REQUIRE(digest.content_keys.size() == 1);
    CHECK(digest.content_keys[0].matches());
    CHECK(check_content_key(path.string(), digest.content_keys[0]).ok());

    // A copy that fails stops the read; its words become the error.
    FileDigest failed;
    failed.content_keys = {key};
    int calls = 0;
    hash_open_file_copying(fd, failed, [&](Bytes) { return ++calls == 2 ? std::string("no space left on device") : std::string(); });
    CHECK(failed.error == "no space left on device");
    CHECK(failed.sha256.empty());

    // A replaced byte inside the blob: the key no longer matches, and the
    // error names the file, the key and the digest found.
    bytes[static_cast<size_t>(blob_offset + blob_size / 2)] ^= 0xff;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    FileDigest tampered;
    tampered.content_keys = {key};
    hash_open_file_copying(fd, tampered, [](Bytes) { return std::string(); });
    REQUIRE(tampered.content_keys.size() == 1);
    CHECK_FALSE(tampered.content_keys[0].matches());
    Status refused = check_content_key(path.string(), tampered.content_keys[0]);
    REQUIRE_FALSE(refused.ok());
    CHECK(contains(refused.error().message, path.string()));
    CHECK(contains(refused.error().message, key.key));
    CHECK(contains(refused.error().message, "hash to " + tampered.content_keys[0].actual));
    ::close(fd);
  }
}
