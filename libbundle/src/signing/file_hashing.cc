// One file's SHA-256 and the SHA-256 of each content-addressed blob inside it,
// from a single read of the file.
//
// The file is read with pread into 1 MiB buffers (no mapping: a file cut
// short while it is read is an error, not a SIGBUS). The whole-file digest is
// one sequential stream. The blobs' digests are other streams over the same
// bytes: when they are small they are updated from the same buffer by the
// same thread; when they are large (most of a .ptd of weights) a second
// thread hashes them from the buffers the first one filled, a few chunks
// behind it, so that a large file costs two cores for the time of one pass
// instead of one core for two passes.
//
// A copy (export's data file) takes each chunk too, once both streams have
// it: the digests are of the very bytes written, and the source is read
// once. It runs on the thread that finishes with a chunk last (the blob
// thread where there is one), so that the two cores share the work evenly.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "ptbundle/base/sha256.h"
#include "signing/signing_internal.h"

namespace ptb::detail {
namespace {

constexpr size_t kChunk = 1 << 20;
constexpr size_t kSlots = 4;
// Blob bytes above which a second thread hashes them.
constexpr uint64_t kFollowerBytes = 16ull << 20;

// The digests of possibly overlapping byte ranges, fed chunk by chunk in file order.
class RangeDigests {
 public:
  explicit RangeDigests(std::vector<ContentKeyDigest>& keys) : keys_(keys) {
    for (size_t i = 0; i < keys.size(); ++i) order_.push_back(i);
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return keys[a].offset < keys[b].offset; });
    for (size_t i = 0; i < keys.size(); ++i) hashers_.push_back(std::make_unique<Sha256>());
  }

  void feed(uint64_t at, Bytes chunk) {
    const uint64_t end = at + chunk.size();
    while (first_ < order_.size() && range_end(order_[first_]) <= at) ++first_;
    for (size_t i = first_; i < order_.size() && keys_[order_[i]].offset < end; ++i) {
      const ContentKeyDigest& key = keys_[order_[i]];
      const uint64_t from = std::max(at, key.offset);
      const uint64_t to = std::min(end, range_end(order_[i]));
      if (from < to) hashers_[order_[i]]->update(chunk.subspan(static_cast<size_t>(from - at), static_cast<size_t>(to - from)));
    }
  }

  void finish() {
    for (size_t i = 0; i < keys_.size(); ++i) keys_[i].actual = to_hex(hashers_[i]->finish());
  }

 private:
  uint64_t range_end(size_t index) const { return keys_[index].offset + keys_[index].size; }

  std::vector<ContentKeyDigest>& keys_;
  std::vector<size_t> order_;
  std::vector<std::unique_ptr<Sha256>> hashers_;
  size_t first_ = 0;
};

// Buffers filled by the reading thread and handed to the blob thread: a
// bounded single-producer, single-consumer ring.
struct Ring {
  static constexpr uint64_t kDone = 1ull << 63;
  std::array<std::vector<uint8_t>, kSlots> slots;
  std::array<uint64_t, kSlots> offsets{};
  std::array<size_t, kSlots> lengths{};
  std::atomic<uint64_t> produced{0};  // chunks filled; kDone set when no more will come
  std::atomic<uint64_t> consumed{0};  // chunks the blob thread is finished with
  std::atomic<bool> failed{false};    // the copy failed: the reader stops
};

void follow(Ring& ring, RangeDigests& ranges, const ChunkCopy* copy, std::string& copy_error) {
  for (uint64_t chunk = 0;; ++chunk) {
    uint64_t seen = ring.produced.load(std::memory_order_acquire);
    while ((seen & ~Ring::kDone) <= chunk) {
      if (seen & Ring::kDone) return;
      ring.produced.wait(seen, std::memory_order_acquire);
      seen = ring.produced.load(std::memory_order_acquire);
    }
    const size_t slot = chunk % kSlots;
    const Bytes bytes(ring.slots[slot].data(), ring.lengths[slot]);
    ranges.feed(ring.offsets[slot], bytes);
    if (copy && copy_error.empty()) {
      copy_error = (*copy)(bytes);
      if (!copy_error.empty()) ring.failed.store(true, std::memory_order_release);
    }
    ring.consumed.store(chunk + 1, std::memory_order_release);
    ring.consumed.notify_one();
  }
}

// Reads [0, size) of fd; `use` gets each chunk in order. Returns an error message, or "".
template <class Use>
std::string read_chunks(int fd, uint64_t size, std::vector<uint8_t>& buffer, uint64_t at, Use&& use) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - at));
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, buffer.data() + got, want - got, static_cast<off_t>(at + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("cannot read at offset ") + std::to_string(at + got) + ": " + std::strerror(errno);
    if (n == 0) return "the file was cut short to " + std::to_string(at + got) + " bytes while it was read";
    got += static_cast<size_t>(n);
  }
  use(Bytes(buffer.data(), want));
  return {};
}

}  // namespace

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void hash_file(const std::string& path, FileDigest& file, bool content_keys, ProgressCounter* progress) {
  // The walk saw a regular file; it may have become a FIFO or a link since:
  // neither is followed or waited on (O_NONBLOCK), fstat refuses both.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    file.error = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  if (content_keys) file.content_keys = content_keys_of_descriptor(fd, path);
  hash_descriptor(fd, file, progress, nullptr);
  ::close(fd);
}

namespace {

// `file`'s size from the open descriptor, and its content keys cut to the
// ranges that fit in it; false, with file.error, when fd is no regular file.
bool size_and_fitting_keys(int fd, FileDigest& file) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    file.error = "not a regular file";
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  file.size = size;
  std::vector<ContentKeyDigest>& keys = file.content_keys;
  keys.erase(std::remove_if(keys.begin(), keys.end(), [&](const ContentKeyDigest& k) { return !range_fits(k.offset, k.size, size); }),
             keys.end());
  return true;
}

}  // namespace

void hash_descriptor(int fd, FileDigest& file, ProgressCounter* progress, const ChunkCopy* copy) {
  if (!size_and_fitting_keys(fd, file)) return;
  const uint64_t size = file.size;
  std::vector<ContentKeyDigest>& keys = file.content_keys;
  uint64_t blob_bytes = 0;
  for (const auto& key : keys) blob_bytes += key.size;

  Sha256 whole;
  RangeDigests ranges(keys);
  std::string error;
  std::string copy_error;
  if (blob_bytes < kFollowerBytes) {
    std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(kChunk, std::max<uint64_t>(size, 1))));
    for (uint64_t at = 0; at < size && error.empty(); at += kChunk) {
      error = read_chunks(fd, size, buffer, at, [&](Bytes chunk) {
        whole.update(chunk);
        ranges.feed(at, chunk);
        if (progress) progress->add(chunk.size());
        if (copy) copy_error = (*copy)(chunk);
      });
      if (!copy_error.empty()) break;
    }
  } else {
    Ring ring;
    for (auto& slot : ring.slots) slot.resize(kChunk);
    std::thread follower([&] { follow(ring, ranges, copy, copy_error); });
    uint64_t published = 0;
    for (uint64_t at = 0; at < size && error.empty() && !ring.failed.load(std::memory_order_acquire); at += kChunk) {
      uint64_t consumed = ring.consumed.load(std::memory_order_acquire);
      while (published - consumed >= kSlots) {
        ring.consumed.wait(consumed, std::memory_order_acquire);
        consumed = ring.consumed.load(std::memory_order_acquire);
      }
      const size_t slot = published % kSlots;
      error = read_chunks(fd, size, ring.slots[slot], at, [&](Bytes bytes) {
        whole.update(bytes);
        ring.offsets[slot] = at;
        ring.lengths[slot] = bytes.size();
        if (progress) progress->add(bytes.size());
      });
      if (!error.empty()) break;
      ring.produced.store(++published, std::memory_order_release);
      ring.produced.notify_one();
    }
    ring.produced.store(published | Ring::kDone, std::memory_order_release);
    ring.produced.notify_one();
    follower.join();
  }
  if (error.empty() && !copy_error.empty()) error = copy_error;
  if (!error.empty()) {
    file.error = error;
    return;
  }
  file.sha256 = to_hex(whole.finish());
  ranges.finish();
}

void hash_key_ranges(int fd, FileDigest& file, ProgressCounter* progress) {
  if (!size_and_fitting_keys(fd, file)) return;
  std::vector<ContentKeyDigest>& keys = file.content_keys;
  std::vector<uint8_t> buffer(kChunk);
  for (ContentKeyDigest& key : keys) {
    Sha256 hash;
    for (uint64_t done = 0; done < key.size;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, key.size - done));
      ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(key.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        file.error = n < 0 ? std::string("cannot read at offset ") + std::to_string(key.offset + done) + ": " + std::strerror(errno)
                           : "the file was cut short to " + std::to_string(key.offset + done) + " bytes while it was read";
        return;
      }
      hash.update(Bytes(buffer.data(), static_cast<size_t>(n)));
      if (progress) progress->add(static_cast<uint64_t>(n));
      done += static_cast<uint64_t>(n);
    }
    key.actual = to_hex(hash.finish());
  }
}

}  // namespace ptb::detail

namespace ptb {

void hash_open_file(int fd, FileDigest& file, ProgressCounter* progress) {
  detail::hash_descriptor(fd, file, progress, nullptr);
}

void hash_open_file_copying(int fd, FileDigest& file, const ChunkCopy& copy) {
  detail::hash_descriptor(fd, file, nullptr, &copy);
}

}  // namespace ptb
