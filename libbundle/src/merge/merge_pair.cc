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

constexpr const char* kMagic = "ptbundle merge pair 1";
constexpr size_t kMaxJournal = 8192;

std::string folder_of(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string name_of(const std::string& path) { return fs::path(path).filename().string(); }

// AtomicOutput's temporary name for `name`: ".<name>.XXXXXX.tmp". Anything
// else in a journal is refused, so a planted journal cannot rename an
// arbitrary file over the program.
bool is_temp_of(const std::string& temp, const std::string& name) {
  const std::string prefix = "." + name + ".";
  if (temp.size() != prefix.size() + 6 + 4 || temp.compare(0, prefix.size(), prefix) != 0) return false;
  if (temp.compare(temp.size() - 4, 4, ".tmp") != 0) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 6; ++i) {
    if (!std::isalnum(static_cast<unsigned char>(temp[i]))) return false;
  }
  return true;
}

struct Journal {
  std::string pte_temp;
  std::string output_ptd;
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
  std::string magic, program, data;
  std::getline(lines, magic);
  std::getline(lines, program);
  std::getline(lines, data);
  Journal journal;
  const bool shaped = magic == kMagic && program.rfind("program ", 0) == 0 && data.rfind("data ", 0) == 0;
  if (shaped) {
    journal.pte_temp = program.substr(8);
    journal.output_ptd = data.substr(5);
  }
  if (!shaped || !is_temp_of(journal.pte_temp, name_of(output_pte)) || journal.output_ptd.empty()) {
    return invalid(path + ": not a merge journal ptbundle wrote (expected \"" + kMagic +
                   "\", a program line naming .<program>.XXXXXX.tmp and a data line); remove it if no merge is running");
  }
  return std::optional<Journal>(std::move(journal));
}

}  // namespace

std::string pair_journal_path(const std::string& output_pte) {
  return folder_of(output_pte) + "/." + name_of(output_pte) + ".ptbundle-pair";
}

Status write_pair_journal(const std::string& output_pte, const std::string& pte_temp, const std::string& output_ptd) {
  const std::string text = std::string(kMagic) + "\nprogram " + name_of(pte_temp) + "\ndata " + output_ptd + "\n";
  return write_file_atomically(pair_journal_path(output_pte), text);
}

void remove_pair_journal(const std::string& output_pte) {
  const std::string folder = folder_of(output_pte);
  ::unlink(pair_journal_path(output_pte).c_str());
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

Result<std::optional<std::string>> interrupted_pair(const std::string& output_pte) {
  PTB_TRY(std::optional<Journal> journal, read_journal(output_pte));
  if (!journal) return std::optional<std::string>();
  return std::optional<std::string>(journal->output_ptd);
}

Result<std::string> finish_interrupted_pair(const std::string& output_pte) {
  PTB_TRY(std::optional<Journal> journal, read_journal(output_pte));
  if (!journal) return std::string();
  const std::string folder = folder_of(output_pte);
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return io_error(folder + ": cannot open the folder: " + std::strerror(errno));
  struct stat info {};
  std::string done;
  if (::fstatat(dir, journal->pte_temp.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode)) {
    if (::renameat(dir, journal->pte_temp.c_str(), dir, name_of(output_pte).c_str()) != 0) {
      Error error = io_error(output_pte + ": cannot finish the interrupted merge (renaming " + journal->pte_temp +
                             " into place): " + std::strerror(errno));
      ::close(dir);
      return error;
    }
    done = "finished an interrupted merge: " + output_pte + " now matches " + journal->output_ptd;
  } else {
    done = "removed the journal of a merge that had finished: " + pair_journal_path(output_pte);
  }
  ::fsync(dir);
  ::close(dir);
  remove_pair_journal(output_pte);
  return done;
}

}  // namespace ptb::detail
