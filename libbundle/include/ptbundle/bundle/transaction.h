// A change to a bundle folder as one transaction, so that two writers never
// lose each other's parts and an interruption never breaks the bundle:
//  - an advisory lock (flock on <bundle>/.ptbundle.lock, removed with the
//    lock): a second writer waits for the first (up to a bounded time) and
//    then reads the manifest the first one wrote;
//  - new files under names the old manifest does not use (part_file_path's
//    generations), written as temporary files;
//  - a journal (.ptbundle.pending) naming every file about to be placed or
//    superseded, written before the first rename;
//  - the renames, then bundle.json renamed last: the commit point;
//  - the superseded files removed, then the journal.
// Readers (verify, inspect, sign, run, merge's inputs) take the folder's
// flock shared (acquire_read_lock) and a writer takes it exclusively from
// begin() to its end, so a reader sees the bundle before a write or after
// it, never between (no temporaries, no half-placed part).
// Killed anywhere, the folder holds the old bundle (or the new one) plus
// files the journal names and temporaries (".<name>.XXXXXX.tmp"): verify
// warns about them and the next writer, holding the lock, removes them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/bundle/manifest.h"

namespace ptb {

inline constexpr const char* kLockFileName = ".ptbundle.lock";
inline constexpr const char* kJournalFileName = ".ptbundle.pending";

// How long a writer waits for another one, or for readers: $PTBUNDLE_LOCK_WAIT
// seconds (0 to 86400), else 300. A writer that gives up names the lock's
// holders (pid and command, from /proc/locks) where it can.
std::chrono::seconds bundle_lock_wait();

// What an interrupted writer left in a bundle folder (paths relative to it).
// The journal is a plain file anyone can write, so it only explains files
// its own command could have written: a file of a part bundle.json lists,
// under that part's name in another generation ("enc@1.pte" placed before
// the commit, "enc.pte" superseded after it). Any other .pte/.ptd it names
// is `unexplained`: indistinguishable from a planted file, so verify fails
// it as unlisted, and only a writer (holding the lock) removes it.
struct BundleLeftovers {
  std::vector<std::string> temporary;    // ".<name>.XXXXXX.tmp" files
  std::vector<std::string> pending;      // named by the journal: another generation of a listed part's file
  std::vector<std::string> unexplained;  // named by the journal, of no part bundle.json lists
  bool journal = false;
};
// `manifest`: the bundle.json now in the folder, if it reads.
BundleLeftovers find_leftovers(const BundleDir& dir, const Manifest* manifest);

// Whether `name` has the form of an AtomicOutput temporary file.
bool is_temporary_name(const std::string& name);

// A reader's hold on a bundle folder: flock(LOCK_SH) on the folder itself,
// which a writer holds exclusively (BundleTransaction). The folder and not
// .ptbundle.lock: a reader must not create files in the bundle, which may be
// read-only to it (another user's bundle, a read-only mount), and a lock
// file a reader made would be one more file for a signature to list. One
// small function, so that the bundle opener can take it in one place.
class BundleReadLock {
 public:
  BundleReadLock() = default;
  explicit BundleReadLock(int fd) : fd_(fd) {}
  BundleReadLock(BundleReadLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  BundleReadLock& operator=(BundleReadLock&& other) noexcept;
  BundleReadLock(const BundleReadLock&) = delete;
  BundleReadLock& operator=(const BundleReadLock&) = delete;
  ~BundleReadLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};
// Waits (up to `wait`) while a writer changes the bundle. A writer waiting
// for readers to finish (it holds .ptbundle.lock) goes first: a new reader
// waits up to 10 s for it before taking the lock, so readers that follow
// each other cannot hold writers off. A file system
// without flock on folders gives an unheld lock rather than an error: the
// reader then reads as it did before readers locked.
Result<BundleReadLock> acquire_read_lock(const BundleDir& dir, std::chrono::seconds wait = bundle_lock_wait());

// Whether the folder's .ptbundle.lock is a killed writer's leftover: it is
// there and no one holds it. A live writer's (one waiting for the folder
// lock a reader holds) is not a file of the bundle, and a reader's digests
// leave it out. A writer creates the file and locks it a moment later, so an
// unheld lock file is looked at again for up to 100 ms before it is called
// stale (1,000 rounds of exports racing sign found that moment 3 times).
bool lock_file_is_stale(const BundleDir& dir);

class BundleTransaction {
 public:
  // Opens the folder (creating it when `create`), takes the lock (waiting up
  // to `wait`), and removes what an interrupted writer left.
  static Result<BundleTransaction> begin(const std::string& bundle_dir, bool create, std::chrono::seconds wait);

  BundleTransaction() = default;
  BundleTransaction(BundleTransaction&&) noexcept;
  BundleTransaction& operator=(BundleTransaction&&) noexcept;
  ~BundleTransaction();

  const BundleDir& dir() const { return dir_; }
  bool created() const { return created_; }  // the folder did not exist before
  // The manifest read under the lock; nullopt when the folder has none.
  const std::optional<Manifest>& manifest() const { return manifest_; }
  // Removes the lock file and the folder when this transaction created the
  // folder and leaves it empty (a failed first export), then the folders it
  // made above it ("-o a/b/c/B" where a did not exist), each while empty.
  void remove_if_unused();

  struct Placement {
    std::string path;  // relative to the folder, where the output is renamed to
    AtomicOutput* output = nullptr;
  };
  // Places the outputs (each renamed into place), writes `manifest` as
  // bundle.json, then removes `superseded` (paths relative to the folder)
  // unless the new manifest lists them. SIGINT, SIGTERM and SIGHUP wait
  // until it has finished (DeferInterrupts); a failure before bundle.json is
  // written removes what it placed and the journal, leaving the old bundle.
  // Test kill points (test_kill_point): "journal", "rename-1".."rename-N",
  // "manifest", "cleanup".
  // `manifest_file`, when given, holds bundle.json's text (which parses to
  // `manifest`) and is renamed into place instead of `manifest` being
  // written: a pulled bundle keeps the exact bytes its signature covers.
  Status commit(const std::vector<Placement>& outputs, const Manifest& manifest,
                const std::vector<std::string>& superseded, AtomicOutput* manifest_file = nullptr);

 private:
  BundleDir dir_;
  int lock_fd_ = -1;
  int folder_lock_fd_ = -1;  // the folder, flock(LOCK_EX): readers wait (acquire_read_lock)
  int lock_cleanup_slot_ = -1;  // register_temp_at: SIGINT removes the lock file too
  bool created_ = false;
  std::vector<std::string> created_parents_;  // folders made above it, deepest first
  std::optional<Manifest> manifest_;
};

// Merge's staging folders ".<OUT>.merge-XXXXXX" beside OUT (mkdtemp's six
// letters and digits): each is locked (flock on the folder) while its merge
// runs and holds a marker file (kStagingMarkerName, with kStagingMarkerText)
// from right after mkdtemp until just after it is renamed to OUT (a marker
// left in OUT is a temporary file, find_leftovers). Only a folder with that
// name, owned by this user, holding the marker (or nothing at all: killed
// before the marker was written) and locked by no process is a leftover of a
// killed merge: a user's ".OUT.merge-notes" is never one, and never removed.
inline constexpr const char* kStagingMarkerName = ".ptbundle-merge-staging";
inline constexpr const char* kStagingMarkerText = "ptbundle merge staging folder 1\n";
// Writes the marker into the folder open at `folder_fd` (`folder` for messages).
Status mark_staging(int folder_fd, const std::string& folder);
// Removes it, once the folder has become the merged bundle.
Status unmark_staging(int folder_fd, const std::string& folder);
std::vector<std::string> find_stale_staging(const std::string& output_dir);
void remove_stale_staging(const std::string& output_dir);

}  // namespace ptb
