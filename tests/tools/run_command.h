// Runs a program as a subprocess for the CLI tests: exit code, stdout and stderr.
#ifndef PMINDEX_TESTS_TOOLS_RUN_COMMAND_H_
#define PMINDEX_TESTS_TOOLS_RUN_COMMAND_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pmindex::testing {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out, err;
  double seconds = 0;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts argv with stdout/stderr redirected to the given files; returns the child's pid.
inline pid_t StartCommand(const std::vector<std::string>& argv, const std::string& out_path,
                          const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

inline int WaitCommand(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs argv to completion; `scratch` is a directory for the captured output.
inline CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch) {
  static int counter = 0;
  const std::string out = scratch + "/cmd" + std::to_string(counter) + ".out";
  const std::string err = scratch + "/cmd" + std::to_string(counter++) + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r;
  r.exit_code = WaitCommand(StartCommand(argv, out, err));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = ReadAll(out);
  r.err = ReadAll(err);
  unlink(out.c_str());
  unlink(err.c_str());
  return r;
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_TOOLS_RUN_COMMAND_H_
