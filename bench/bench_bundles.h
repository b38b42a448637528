// Bundles the benchmarks make from the real fixtures: ExecuTorch's named_sm90
// export whose data file gets one extra weights blob of a chosen size under
// its content address ("<sha256>_weights_blob", random bytes), exported into
// N parts, and a P-256 key pair to sign them with.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb::bench {

// named_sm90's data file plus `blob_size` random bytes stored under their SHA-256.
inline void write_named_sm90_data(const std::filesystem::path& fixtures, const std::filesystem::path& out,
                              uint64_t blob_size) {
  std::vector<uint8_t> blob(blob_size);
  std::mt19937_64 random(42);
  for (size_t i = 0; i + 8 <= blob.size(); i += 8) {
    const uint64_t v = random();
    std::copy_n(reinterpret_cast<const uint8_t*>(&v), 8, blob.data() + i);
  }
  const std::string key = to_hex(sha256(Bytes(blob.data(), blob.size()))) + "_weights_blob";
  auto original = need(PtdFile::open((fixtures / "cuda/named_sm90/encoder.ptd").string()));
  PtdContents contents;
  for (const auto& entry : original.entries())
    contents.add(entry.key, SegmentSource::file_range(original.file(), entry.file_offset, entry.size), entry.layout);
  contents.add(key, SegmentSource::memory(Bytes(blob.data(), blob.size())), std::nullopt);
  need(write_ptd_file(out.string(), contents));
}

// A P-256 key pair: the private key at `key`, the public one at `pub` (PEM).
inline void write_key(const std::filesystem::path& key, const std::filesystem::path& pub) {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (!pkey) fail("cannot make a P-256 key");
  std::FILE* out = std::fopen(key.c_str(), "w");
  if (!out) fail("cannot write " + key.string());
  PEM_write_PrivateKey(out, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(out);
  out = std::fopen(pub.c_str(), "w");
  if (!out) fail("cannot write " + pub.string());
  PEM_write_PUBKEY(out, pkey);
  std::fclose(out);
  EVP_PKEY_free(pkey);
}

// `ptbundle export` of `parts` parts part0, part1, ..., each named_sm90's
// program with `data` as its data file.
inline void export_bundle(const std::string& cli, const std::filesystem::path& fixtures,
                          const std::filesystem::path& data, const std::filesystem::path& bundle, int parts) {
  std::vector<std::string> argv = {cli, "export", "-o", bundle.string()};
  for (int p = 0; p < parts; ++p) {
    argv.push_back("--part");
    argv.push_back("part" + std::to_string(p) + "=" + (fixtures / "cuda/named_sm90/model.pte").string() + "," +
                   data.string());
  }
  if (run_child(argv).status != 0) fail("ptbundle export failed: " + bundle.string());
}

}  // namespace ptb::bench
