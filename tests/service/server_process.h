// A real posewire-server process for tests and benchmarks that must signal
// or kill it (SIGTERM, SIGKILL): started on an ephemeral loopback port, its
// output in a file, which is where its port is read from.
#ifndef POSEWIRE_TESTS_SERVICE_SERVER_PROCESS_H_
#define POSEWIRE_TESTS_SERVICE_SERVER_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace posewire::testing {

class ServerProcess {
 public:
  // Starts `binary` with --listen=127.0.0.1:0 --threads=2, writing its
  // output to `log_path`, and waits up to 10 s for its port; port() is 0
  // if it never reported one.
  ServerProcess(const std::string& binary, const std::string& log_path)
      : log_path_(log_path) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execl(binary.c_str(), binary.c_str(), "--listen=127.0.0.1:0",
            "--threads=2", static_cast<char*>(nullptr));
      _exit(127);
    }
    constexpr char kListening[] = "listening on 127.0.0.1:";
    for (int i = 0; i < 400 && port_ == 0; ++i) {
      absl::SleepFor(absl::Milliseconds(25));
      std::ifstream log(log_path);
      std::stringstream text;
      text << log.rdbuf();
      const std::string s = text.str();
      const size_t at = s.find(kListening);
      if (at != std::string::npos) {
        port_ = std::atoi(s.c_str() + at + sizeof(kListening) - 1);
      }
    }
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    Signal(SIGKILL);
    Wait();
  }

  int port() const { return port_; }
  const std::string& log_path() const { return log_path_; }

  void Signal(int signal) {
    if (pid_ > 0) kill(pid_, signal);
  }
  // Waits for the process to exit; its exit status, or -1.
  int Wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void Kill(int signal) {
    Signal(signal);
    Wait();
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace posewire::testing

#endif  // POSEWIRE_TESTS_SERVICE_SERVER_PROCESS_H_
