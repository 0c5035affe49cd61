// posewire-load's echo baseline: a minimal gRPC server on the callback API
// that answers every Session message with recorded bytes of the real
// service's answer, so the same senders over the same connections measure
// what the wire alone costs. It runs in a child process (posewire-load
// itself, --echo_serve) confined to the CPUs the server gets, not the
// generator's, so the echo and the service spend the same cores.
#ifndef POSEWIRE_CLIENTS_LOAD_ECHO_SERVER_H_
#define POSEWIRE_CLIENTS_LOAD_ECHO_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/load/workload.h"
#include "posewire/v1/posewire.grpc.pb.h"

namespace posewire::load {

// What the echo answers on each stream: the k-th message gets
// registration_replies[k] while k is below their count, every later message
// gets frame_reply, or with a query_reply (the referee's ticks: a frame,
// then a hit query) frame_reply and query_reply in turn.
struct EchoReplies {
  std::vector<std::string> registration_replies;
  std::string frame_reply;
  std::string query_reply;
};

// Records the service's answers to one stream's registrations and first
// frame (and its query), so the echo's answers have the service's sizes
// and contents.
absl::StatusOr<EchoReplies> RecordReplies(v1::PoseWire::Stub& stub,
                                          const Workload& w);

// In the child: serves `replies` on a free loopback port, writes the port
// as one line to stdout, and serves until stdin closes (the parent is
// done or gone). Returns the process's exit code.
int ServeEcho(const EchoReplies& replies);

// The echo child as the parent sees it; destroying it closes the child's
// stdin and waits for it.
class EchoProcess {
 public:
  // Starts `argv` (posewire-load with --echo_serve) and reads its port.
  static absl::StatusOr<std::unique_ptr<EchoProcess>> Launch(
      const std::vector<std::string>& argv);
  ~EchoProcess();
  EchoProcess(const EchoProcess&) = delete;
  EchoProcess& operator=(const EchoProcess&) = delete;

  int port() const { return port_; }

 private:
  EchoProcess(pid_t pid, int to_child, int port)
      : pid_(pid), to_child_(to_child), port_(port) {}
  pid_t pid_;
  int to_child_;
  int port_;
};

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_ECHO_SERVER_H_
