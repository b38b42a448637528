#include "merge/merge_pair.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "ptbundle/base/file.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "ptbundle merge pair 2";
constexpr size_t kMaxJournal = 8192;

std::string folder_of(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string name_of(const std::string& path) { return fs::path(path).filename().string(); }

std::string beside(const std::string& path, const std::string& name) { return folder_of(path) + "/" + name; }

// AtomicOutput's temporary name for `name`: ".<name>.XXXXXX.tmp". Anything
// else in a journal is refused, so a planted journal cannot rename an
// arbitrary file over the program, nor have one removed.
bool is_temp_of(const std::string& temp, const std::string& name) {
  const std::string prefix = "." + name + ".";
  if (temp.size() != prefix.size() + 6 + 4 || temp.compare(0, prefix.size(), prefix) != 0) return false;
  if (temp.compare(temp.size() - 4, 4, ".tmp") != 0) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 6; ++i) {
    if (!std::isalnum(static_cast<unsigned char>(temp[i]))) return false;
  }
  return true;
}

// Which file a path names: a rename keeps all three.
struct FileId {
  uint64_t device = 0, inode = 0, size = 0;
  bool operator==(const FileId&) const = default;
};

// A regular file's identity (a symlink is not followed); nullopt for anything else.
std::optional<FileId> identity_of(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return FileId{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino), static_cast<uint64_t>(info.st_size)};
}

std::string id_text(const FileId& id) {
  return std::to_string(id.device) + " " + std::to_string(id.inode) + " " + std::to_string(id.size);
}

// "<device> <inode> <size> <name>": the name last, as it may hold spaces.
bool parse_named_id(const std::string& text, FileId& id, std::string& name) {
  std::istringstream in(text);
  if (!(in >> id.device >> id.inode >> id.size)) return false;
  if (in.get() != ' ') return false;
  std::getline(in, name);
  return !name.empty();
}

struct Journal {
  std::string pte_temp;  // in the program's folder
  FileId pte_id;
  std::string output_ptd;
  std::string ptd_temp;  // in the data file's folder
  FileId ptd_id;
};

// nullopt: no journal. A journal that is not a small regular file of ours
// is an error naming it.
Result<std::optional<Journal>> read_journal(const std::string& output_pte) {
  const std::string path = pair_journal_path(output_pte);
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::optional<Journal>();
  if (fd < 0) return io_error(path + ": cannot open the merge journal: " + std::strerror(errno));
  struct stat info {};
  std::string text(kMaxJournal + 1, '\0');
  ssize_t got = -1;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) got = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (got < 0 || static_cast<size_t>(got) > kMaxJournal) {
    return invalid(path + ": expected a merge journal (a regular file under " + std::to_string(kMaxJournal) +
                   " bytes); remove it if no merge is running");
  }
  text.resize(static_cast<size_t>(got));
  std::istringstream lines(text);
  std::string magic, program, data, data_temp;
  std::getline(lines, magic);
  std::getline(lines, program);
  std::getline(lines, data);
  std::getline(lines, data_temp);
  Journal journal;
  bool shaped = magic == kMagic && program.rfind("program ", 0) == 0 && data.rfind("data ", 0) == 0 &&
                data_temp.rfind("data_temp ", 0) == 0;
  if (shaped) {
    journal.output_ptd = data.substr(5);
    shaped = parse_named_id(program.substr(8), journal.pte_id, journal.pte_temp) &&
             parse_named_id(data_temp.substr(10), journal.ptd_id, journal.ptd_temp) && !journal.output_ptd.empty() &&
             is_temp_of(journal.pte_temp, name_of(output_pte)) && is_temp_of(journal.ptd_temp, name_of(journal.output_ptd));
  }
  if (!shaped) {
    return invalid(path + ": not a merge journal ptbundle wrote (expected \"" + kMagic +
                   "\", a program and a data_temp line naming .<file>.XXXXXX.tmp with its identity, and a data line); "
                   "remove it if no merge is running");
  }
  return std::optional<Journal>(std::move(journal));
}

// What the files show of the journal's merge.
struct PairState {
  bool data_renamed = false;     // the data file in place is the journal's new one
  bool program_renamed = false;  // so is the program
  bool program_temp = false;     // the program's temporary file is still there
};

PairState state_of(const std::string& output_pte, const Journal& journal) {
  PairState state;
  state.data_renamed = identity_of(journal.output_ptd) == journal.ptd_id;
  state.program_renamed = identity_of(output_pte) == journal.pte_id;
  state.program_temp = identity_of(beside(output_pte, journal.pte_temp)) == journal.pte_id;
  return state;
}

void fsync_folder(const std::string& folder) {
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

// The journal's temporary file at `path`, removed if it is still the one
// the journal records.
void remove_if_ours(const std::string& path, const FileId& id) {
  if (identity_of(path) == id) ::unlink(path.c_str());
}

}  // namespace

std::string pair_journal_path(const std::string& output_pte) {
  return folder_of(output_pte) + "/." + name_of(output_pte) + ".ptbundle-pair";
}

Status write_pair_journal(const std::string& output_pte, const std::string& pte_temp, const std::string& output_ptd,
                          const std::string& ptd_temp) {
  auto pte_id = identity_of(pte_temp);
  auto ptd_id = identity_of(ptd_temp);
  if (!pte_id || !ptd_id) {
    return io_error(output_pte + ": cannot read the identity of the temporary files " + pte_temp + " and " + ptd_temp +
                    " for the merge journal: " + std::strerror(errno));
  }
  // The data file's absolute path: the next merge may run from another folder.
  std::error_code ec;
  const fs::path data = fs::absolute(output_ptd, ec).lexically_normal();
  const std::string text = std::string(kMagic) + "\nprogram " + id_text(*pte_id) + " " + name_of(pte_temp) + "\ndata " +
                           (ec ? output_ptd : data.string()) + "\ndata_temp " + id_text(*ptd_id) + " " + name_of(ptd_temp) + "\n";
  return write_file_atomically(pair_journal_path(output_pte), text);
}

void remove_pair_journal(const std::string& output_pte) {
  ::unlink(pair_journal_path(output_pte).c_str());
  fsync_folder(folder_of(output_pte));
}

Result<std::optional<std::string>> interrupted_pair(const std::string& output_pte) {
  PTB_TRY(std::optional<Journal> journal, read_journal(output_pte));
  if (!journal) return std::optional<std::string>();
  const PairState state = state_of(output_pte, *journal);
  if (state.data_renamed && !state.program_renamed) return std::optional<std::string>(journal->output_ptd);
  return std::optional<std::string>();
}

Result<std::string> finish_interrupted_pair(const std::string& output_pte) {
  PTB_TRY(std::optional<Journal> journal, read_journal(output_pte));
  if (!journal) return std::string();
  const PairState state = state_of(output_pte, *journal);
  const std::string pte_temp = beside(output_pte, journal->pte_temp);
  std::string done;
  if (state.data_renamed && state.program_temp) {
    if (::rename(pte_temp.c_str(), output_pte.c_str()) != 0) {
      return io_error(output_pte + ": cannot finish the interrupted merge (renaming " + journal->pte_temp +
                      " into place): " + std::strerror(errno));
    }
    fsync_folder(folder_of(output_pte));
    done = "finished an interrupted merge: " + output_pte + " now matches " + journal->output_ptd;
  } else if (state.data_renamed && state.program_renamed) {
    done = "removed the journal of a merge that had finished: " + pair_journal_path(output_pte);
  } else if (!state.data_renamed) {
    // Killed before the data file's rename: the old pair stands.
    remove_if_ours(pte_temp, journal->pte_id);
    remove_if_ours(beside(journal->output_ptd, journal->ptd_temp), journal->ptd_id);
    done = "removed what an interrupted merge left before renaming anything; " + output_pte + " and " +
           journal->output_ptd + " are as they were";
  } else {
    // The new data file is in place, but the program is neither the new one
    // nor its temporary file: something else changed it since; nothing
    // here can be completed.
    done = "removed the journal of an interrupted merge whose program " + output_pte +
           " has been replaced since; it does not match " + journal->output_ptd;
  }
  remove_pair_journal(output_pte);
  return done;
}

}  // namespace ptb::detail
