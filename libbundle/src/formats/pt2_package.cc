#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "ptbundle/base/environment.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/pt2.h"
#include "formats/pt2_layout.h"

namespace ptb {
namespace {

constexpr uint64_t kChunk = 1 << 20;

std::string libzip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

std::string entry_context(const std::string& path, std::string_view name) {
  return path + ": entry '" + clipped(name) + "'";
}

std::string method_name(uint16_t method) {
  switch (method) {
    case ZIP_CM_BZIP2: return "bzip2";
    case ZIP_CM_LZMA: return "LZMA";
    case ZIP_CM_XZ: return "xz";
    case 93: return "zstd";
    case ZIP_CM_DEFLATE64: return "deflate64";
    default: return "method " + std::to_string(method);
  }
}

}  // namespace

uint64_t pt2_inflate_bound(uint64_t package_bytes) {
  constexpr uint64_t kBase = 1ull << 30;
  constexpr uint64_t kTimes = 32;
  if (package_bytes > (UINT64_MAX - kBase) / kTimes) return UINT64_MAX;
  return kBase + kTimes * package_bytes;
}

namespace {

}  // namespace

struct Pt2Package::Archive {
  zip_t* zip = nullptr;
  ~Archive() {
    if (zip) zip_discard(zip);  // read-only: nothing to write back
  }
};

Pt2Package::Pt2Package() = default;
Pt2Package::Pt2Package(Pt2Package&&) noexcept = default;
Pt2Package& Pt2Package::operator=(Pt2Package&&) noexcept = default;
Pt2Package::~Pt2Package() = default;

const std::string* Pt2Model::metadata_value(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const Pt2Entry* Pt2Package::find_entry(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

const Pt2Model* Pt2Package::find_model(std::string_view name) const {
  for (const auto& model : models_)
    if (model.name == name) return &model;
  return nullptr;
}

template <class Sink>
Status Pt2Package::stream_entry(std::string_view name, uint64_t max_bytes, Sink&& sink) const {
  const Pt2Entry* entry = find_entry(name);
  if (!entry) return invalid(entry_context(path_, name) + ": no such entry in the package");
  if (entry->encrypted) return invalid(entry_context(path_, name) + ": is encrypted; expected a plain entry");
  if (entry->size > max_bytes)
    return invalid(entry_context(path_, name) + ": is " + std::to_string(entry->size) +
                   " bytes uncompressed; the limit is " + std::to_string(max_bytes));
  // Charged by its declared size before a byte is inflated; the loop below
  // holds the entry to that size.
  if (entry->compression_method != ZIP_CM_STORE) {
    if (entry->size > inflate_bound_ - inflated_)
      return invalid(entry_context(path_, name) + ": inflates to " + std::to_string(entry->size) + " bytes from " +
                     std::to_string(entry->compressed_size) + ", past what ptbundle inflates from one package (" +
                     std::to_string(inflate_bound_) + " bytes: 1 GiB plus 32 times the package's size" +
                     (inflated_ ? ", " + std::to_string(inflated_) + " of them inflated already" : std::string()) +
                     "); expected a package as PyTorch writes it (stored entries)");
    inflated_ += entry->size;
  }
  zip_file_t* file = zip_fopen_index(archive_->zip, entry->index, 0);
  if (!file)
    return invalid(entry_context(path_, name) + ": cannot open: " + zip_strerror(archive_->zip));
  std::unique_ptr<zip_file_t, decltype(&zip_fclose)> closer(file, &zip_fclose);
  // One chunk whatever the entry's size: memory does not grow with it.
  std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(entry->size, kChunk)) + 1);
  uint64_t total = 0;
  for (;;) {
    zip_int64_t n = zip_fread(file, buffer.data(), buffer.size());
    if (n < 0) {
      const bool crc = zip_error_code_zip(zip_file_get_error(file)) == ZIP_ER_CRC;
      return invalid(entry_context(path_, name) + ": " +
                     (crc ? std::string("CRC-32 does not match the central directory's (the entry is damaged)")
                          : "read failed at byte " + std::to_string(total) + ": " + zip_file_strerror(file)));
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    // The central directory may understate what an entry inflates to.
    if (total > entry->size)
      return invalid(entry_context(path_, name) + ": inflates past its declared size of " +
                     std::to_string(entry->size) + " bytes");
    PTB_CHECK(sink(Bytes(buffer.data(), static_cast<size_t>(n))));
  }
  if (total != entry->size)
    return invalid(entry_context(path_, name) + ": holds " + std::to_string(total) + " bytes; expected " +
                   std::to_string(entry->size) + " (the central directory's size)");
  return {};
}

Result<std::vector<uint8_t>> Pt2Package::read_entry(std::string_view name, uint64_t max_bytes) const {
  std::vector<uint8_t> data;
  if (const Pt2Entry* entry = find_entry(name); entry && entry->size <= max_bytes)
    data.reserve(static_cast<size_t>(entry->size));
  PTB_CHECK(stream_entry(name, max_bytes, [&](Bytes chunk) -> Status {
    data.insert(data.end(), chunk.begin(), chunk.end());
    return {};
  }));
  return data;
}

Status Pt2Package::extract_entry(std::string_view name, AtomicOutput& out, uint64_t max_bytes) const {
  return stream_entry(name, max_bytes, [&](Bytes chunk) { return out.write(chunk); });
}

Status Pt2Package::extract_entry_to(std::string_view name, const std::string& output_path,
                                    uint64_t max_bytes) const {
  PTB_TRY(AtomicOutput out, AtomicOutput::create(output_path));
  PTB_CHECK(extract_entry(name, out, max_bytes));
  return out.commit();
}

Result<std::vector<uint8_t>> Pt2Package::read_entry_prefix(std::string_view name, size_t count) const {
  const Pt2Entry* entry = find_entry(name);
  if (!entry) return invalid(entry_context(path_, name) + ": no such entry in the package");
  zip_file_t* file = zip_fopen_index(archive_->zip, entry->index, 0);
  if (!file) return invalid(entry_context(path_, name) + ": cannot open: " + zip_strerror(archive_->zip));
  std::unique_ptr<zip_file_t, decltype(&zip_fclose)> closer(file, &zip_fclose);
  std::vector<uint8_t> bytes(static_cast<size_t>(std::min<uint64_t>(count, entry->size)));
  size_t done = 0;
  while (done < bytes.size()) {
    zip_int64_t n = zip_fread(file, bytes.data() + done, bytes.size() - done);
    if (n < 0) return invalid(entry_context(path_, name) + ": read failed: " + zip_file_strerror(file));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

Result<std::string> Pt2Package::sha256_entry(std::string_view name, uint64_t max_bytes) const {
  Sha256 hash;
  PTB_CHECK(stream_entry(name, max_bytes, [&](Bytes chunk) -> Status {
    hash.update(chunk);
    return {};
  }));
  return to_hex(hash.finish());
}

Result<MappedFile> Pt2Package::extract_entry_mapped(std::string_view name, uint64_t max_bytes) const {
  const std::string folder = temporary_folder();
  int fd = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return io_error(folder + ": cannot create a temporary file to inflate " + entry_context(path_, name) + ": " + std::strerror(errno));
  auto closer = [&] { ::close(fd); };
  Status written = stream_entry(name, max_bytes, [&](Bytes chunk) -> Status {
    const uint8_t* p = chunk.data();
    size_t left = chunk.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error(folder + ": cannot write the inflated " + entry_context(path_, name) + ": " + std::strerror(errno));
      p += n;
      left -= static_cast<size_t>(n);
    }
    return {};
  });
  if (!written.ok()) {
    closer();
    return written.take_error();
  }
  auto mapped = MappedFile::from_fd(fd, path_ + ": " + std::string(name));
  if (!mapped.ok()) return mapped.take_error();  // from_fd owns fd either way
  return mapped;
}

Result<Pt2Package> Pt2Package::open(const std::string& path, Pt2Limits limits) {
  Pt2Package package;
  package.path_ = path;
  package.archive_ = std::make_unique<Archive>();
  int code = 0;
  // Opened as any input (a FIFO or a device is refused before a read), then
  // handed to libzip. CHECKCONS compares each local header with the central
  // directory, which catches truncated and spliced archives before any
  // entry is read.
  PTB_TRY(int fd, open_regular_input(path));
  struct stat st_archive {};
  if (::fstat(fd, &st_archive) != 0) {
    const int saved = errno;
    ::close(fd);
    return io_error(path + ": cannot stat: " + std::strerror(saved));
  }
  package.inflate_bound_ = pt2_inflate_bound(static_cast<uint64_t>(st_archive.st_size));
  package.archive_->zip = zip_fdopen(fd, ZIP_CHECKCONS, &code);
  if (!package.archive_->zip) ::close(fd);
  if (!package.archive_->zip) {
    auto kind = code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ ? ErrorKind::Io : ErrorKind::Invalid;
    std::string why = code == ZIP_ER_EXISTS ? "two entries share one name" : libzip_error_text(code);
    return Error{kind, path + ": not a readable zip archive: " + why};
  }
  zip_int64_t count = zip_get_num_entries(package.archive_->zip, 0);
  std::set<std::string, std::less<>> seen;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(package.archive_->zip, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0)
      return invalid(path + ": central directory entry " + std::to_string(i) + ": " +
                     zip_strerror(package.archive_->zip));
    const zip_uint64_t needed = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC;
    if ((st.valid & needed) != needed)
      return invalid(path + ": central directory entry " + std::to_string(i) + ": name, sizes, method or CRC missing");
    Pt2Entry entry;
    entry.name = st.name;
    entry.index = static_cast<uint64_t>(i);
    entry.size = st.size;
    entry.compressed_size = st.comp_size;
    entry.compression_method = st.comp_method;
    entry.crc32 = st.crc;
    entry.encrypted = (st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE;
    // PyTorch's reader (miniz) takes stored and deflated entries only; bzip2
    // and the like also inflate slowly enough to make a time bomb.
    if (entry.compression_method != ZIP_CM_STORE && entry.compression_method != ZIP_CM_DEFLATE)
      return invalid(entry_context(path, entry.name) + ": compressed with " + method_name(entry.compression_method) +
                     " (ZIP method " + std::to_string(entry.compression_method) +
                     "); expected stored (0) or deflate (8), the methods PyTorch's package reader takes");
    // Two entries with one name would let the reader and PyTorch's loader
    // see different files.
    if (!seen.insert(entry.name).second)
      return invalid(path + ": entry '" + clipped(entry.name) + "' appears twice; expected unique names");
    package.entries_.push_back(std::move(entry));
  }

  PTB_TRY(Pt2Layout layout, classify_pt2_entries(path, package.entries_));
  package.root_ = layout.root;
  package.models_ = std::move(layout.models);
  package.external_weights_ = std::move(layout.external_weights);

  auto read_small_text = [&](const std::string& name) -> Result<std::string> {
    PTB_TRY(auto bytes, package.read_entry(name, limits.max_metadata_bytes));
    return std::string(bytes.begin(), bytes.end());
  };
  if (package.find_entry(package.root_ + "archive_format")) {
    PTB_TRY(package.archive_format_, read_small_text(package.root_ + "archive_format"));
  }
  if (package.find_entry(package.root_ + "archive_version")) {
    PTB_TRY(package.archive_version_, read_small_text(package.root_ + "archive_version"));
  }
  for (auto& model : package.models_) {
    if (!model.metadata_entry) continue;
    PTB_TRY(std::string text, read_small_text(*model.metadata_entry));
    PTB_TRY(model.metadata, parse_pt2_metadata(entry_context(path, *model.metadata_entry), text));
  }
  return package;
}

Result<std::vector<std::pair<std::string, std::string>>> parse_pt2_metadata(const std::string& context,
                                                                            const std::string& text) {
  auto json = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return invalid(context + ": not a JSON object; expected {\"AOTI_DEVICE_KEY\": ..., ...}");
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const auto& [key, value] : json.items()) {
    if (!value.is_string())
      return invalid(context + ": key '" + clipped(key) + "': value is " + value.type_name() + "; expected a string");
    metadata.emplace_back(key, value.get<std::string>());
  }
  return metadata;
}

}  // namespace ptb
