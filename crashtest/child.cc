#include "crashtest/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "pm/crash/tracker.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::crashtest {

uint64_t HashString(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return Mix64(h);
}

Status RunInChild(const std::function<Status()>& fn, double timeout_seconds) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::IOError(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    Status s = fn();
    std::string msg = s.ok() ? std::string("OK") : "FAIL" + s.ToString();
    const char* p = msg.data();
    size_t n = msg.size();
    while (n > 0) {
      ssize_t w = ::write(fds[1], p, n);
      if (w <= 0) break;
      p += w;
      n -= static_cast<size_t>(w);
    }
    _exit(0);
  }
  ::close(fds[1]);
  std::string text;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, static_cast<size_t>(got));
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(fds[0]);
  if (timed_out)
    return Status::Corruption("check timed out after " + std::to_string(timeout_seconds) +
                              " s (hang)");
  if (text.rfind("OK", 0) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return Status::OK();
  if (text.rfind("FAIL", 0) == 0) {
    std::string m = text.substr(4);
    // "Code: message" -> keep it readable as a Corruption with the original code named.
    return Status::Corruption(m);
  }
  return Status::Corruption(pm::crash::DescribeWaitStatus(status));
}

Status CopyFile(const std::string& from, const std::string& to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Status::IOError(from + ": " + strerror(errno));
  struct stat st;
  if (::fstat(in, &st) != 0) {
    ::close(in);
    return Status::IOError(from + ": " + strerror(errno));
  }
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    ::close(in);
    return Status::IOError(to + ": " + strerror(errno));
  }
  off_t left = st.st_size;
  Status s;
  while (left > 0) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, static_cast<size_t>(left), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s = Status::IOError(to + ": copy failed: " + strerror(errno));
      break;
    }
    left -= n;
  }
  ::close(in);
  ::close(out);
  return s;
}

CampaignScope::CampaignScope(const CampaignOptions& o, CampaignResult& res) {
  res.index = o.index;
  const IndexRegistration* reg = FindIndex(o.index);
  if (reg == nullptr || reg->attach == nullptr || !reg->traits.persistent) {
    res.error = Status::InvalidArgument("'" + o.index + "' is not a registered persistent index");
    return;
  }
  previous_mutant_ = pm::selected_mutant();
  if (!pm::set_mutant(o.mutant.c_str())) {
    res.error = Status::NotSupported("mutant '" + o.mutant +
                                     "': this build has no mutants (PMINDEX_MUTANTS=OFF)");
    return;
  }
  selected_ = true;
  reg_ = reg;
  if (o.index_params.empty()) return;
  Result<IndexTraits> traits = TraitsWithParams(o.index, o.index_params, o.dir);
  if (traits.ok()) {
    variant_ = *reg;
    variant_.traits = *traits;
    reg_ = &variant_;
  }
}

CampaignScope::~CampaignScope() {
  if (selected_) pm::set_mutant(previous_mutant_.c_str());
}

}  // namespace pmindex::crashtest
