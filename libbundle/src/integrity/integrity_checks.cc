// The check list, and the small lookups every integrity check shares.
#include "integrity/integrity_internal.h"

namespace ptb {

const char* check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::Fail: return "fail";
    case CheckStatus::Skip: return "skip";
    case CheckStatus::Pass: return "pass";
    case CheckStatus::Warn: return "warn";
  }
  return "pass";
}

void CheckList::add(std::string check, std::string subject, CheckStatus status, std::string message) {
  // The last guard on text from files reaching a message unbounded.
  constexpr size_t kLimit = 4096;
  if (message.size() > kLimit) message = clipped(message, kLimit);
  if (subject.size() > kLimit) subject = clipped(subject, kLimit);
  outcomes_.push_back({path_, std::move(check), std::move(subject), status, std::move(message)});
}
void CheckList::pass(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Pass, std::move(message));
}
void CheckList::fail(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Fail, std::move(message));
}
void CheckList::skip(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Skip, std::move(message));
}

void CheckList::warn(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Warn, std::move(message));
}

size_t CheckList::count(CheckStatus status) const {
  size_t n = 0;
  for (const auto& outcome : outcomes_) n += outcome.status == status;
  return n;
}

namespace detail {

void pass_program(const std::string& subject, const PteFile& pte, CheckList& checks) {
  checks.pass(checks::kProgram, subject,
              std::to_string(pte.segments().size()) + " segment(s) and " + std::to_string(pte.named_data().size()) +
                  " named-data entr" + (pte.named_data().size() == 1 ? "y" : "ies") + ", all inside the file");
}

}  // namespace detail

}  // namespace ptb
