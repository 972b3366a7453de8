// Helpers of the crash campaign: run a check in a forked child with a timeout, copy a file,
// set a campaign up.
#ifndef PMINDEX_CRASHTEST_CHILD_H_
#define PMINDEX_CRASHTEST_CHILD_H_

#include <cstdint>
#include <functional>
#include <string>

#include "bench/generators.h"
#include "crashtest/campaign.h"
#include "pmindex/index.h"
#include "pmindex/status.h"

namespace pmindex::crashtest {

// Runs `fn` in a forked child and returns its Status; a child that dies (signal, sanitizer
// report, abort) or outlives `timeout_seconds` gives Corruption saying so.
Status RunInChild(const std::function<Status()>& fn, double timeout_seconds);

// Copies a file (sparse holes may be filled).
Status CopyFile(const std::string& from, const std::string& to);

// A well-mixed 64-bit hash of a value (the workbench's splitmix64), and of a string.
using bench::Mix64;
uint64_t HashString(const std::string& s);

// What every campaign model does first: finds the options' index, which must be a registered
// persistent one, and selects the options' mutant until the scope ends (then the previous
// selection is back). index() is nullptr if either failed, and `res.error` says why.
class CampaignScope {
 public:
  CampaignScope(const CampaignOptions& o, CampaignResult& res);
  ~CampaignScope();
  CampaignScope(const CampaignScope&) = delete;
  CampaignScope& operator=(const CampaignScope&) = delete;

  const IndexRegistration* index() const { return reg_; }

 private:
  const IndexRegistration* reg_ = nullptr;
  // The registration with the traits of an index made with the campaign's index
  // parameters, where they are given: a variant may change the traits (dash keys=bytes
  // takes byte-string keys), and the workload and the checks follow them.
  IndexRegistration variant_;
  std::string previous_mutant_;
  bool selected_ = false;
};

}  // namespace pmindex::crashtest

#endif  // PMINDEX_CRASHTEST_CHILD_H_
