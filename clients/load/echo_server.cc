#include "clients/load/echo_server.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/load/frame_encoder.h"
#include "proto/grpc_handoff.h"

extern char** environ;

namespace posewire::load {
namespace {

// One Session stream: reads a message, answers it with the recorded reply
// for its position, then reads the next: one in flight at a time, as the
// service does. Like the service's reactors, it tells TSan where gRPC's
// threads take it over (proto/grpc_handoff.h): consecutive callbacks may
// run on different threads, ordered by gRPC's own uninstrumented locks.
class EchoStream final : public grpc::ServerGenericBidiReactor {
 public:
  explicit EchoStream(const EchoReplies& replies) : replies_(replies) {
    HandOffToGrpc(this);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {
      HandOffToGrpc(this);
      Finish(grpc::Status::OK);
      return;
    }
    const size_t registrations = replies_.registration_replies.size();
    const std::string& reply =
        received_ < registrations ? replies_.registration_replies[received_]
        : !replies_.query_reply.empty() && (received_ - registrations) % 2 == 1
            ? replies_.query_reply
            : replies_.frame_reply;
    ++received_;
    grpc::Slice slice(reply.data(), reply.size());
    response_ = grpc::ByteBuffer(&slice, 1);
    HandOffToGrpc(this);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {
      HandOffToGrpc(this);
      Finish(grpc::Status::OK);
      return;
    }
    request_.Clear();
    HandOffToGrpc(this);
    StartRead(&request_);
  }
  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }

 private:
  const EchoReplies& replies_;
  size_t received_ = 0;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

class EchoService final : public grpc::CallbackGenericService {
 public:
  explicit EchoService(const EchoReplies& replies) : replies_(replies) {}
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* /*context*/) override {
    return new EchoStream(replies_);
  }

 private:
  const EchoReplies& replies_;
};

}  // namespace

absl::StatusOr<EchoReplies> RecordReplies(v1::PoseWire::Stub& stub,
                                          const Workload& w) {
  if (w.frames.empty()) return absl::InvalidArgumentError("no frames");
  grpc::ClientContext context;
  auto stream = stub.Session(&context);
  EchoReplies replies;
  v1::SessionResponse response;
  auto exchange = [&](const v1::SessionRequest& request,
                      std::string* reply) -> bool {
    if (!stream->Write(request) || !stream->Read(&response)) return false;
    *reply = response.SerializeAsString();
    return true;
  };
  for (const v1::SessionRequest& r : w.registrations) {
    if (!exchange(r, &replies.registration_replies.emplace_back())) break;
  }
  // The frame as the senders send it, numbered 1.
  std::string frame_bytes;
  FrameEncoder(w.frames[0], w.seconds_per_frame).Encode(1, &frame_bytes);
  v1::SessionRequest frame;
  const bool parsed = frame.ParseFromString(frame_bytes);
  bool answered =
      parsed && replies.registration_replies.size() == w.registrations.size() &&
      exchange(frame, &replies.frame_reply);
  if (answered && !w.queries.empty()) {
    v1::SessionRequest query = w.queries[0];
    query.mutable_query()->set_time(w.QueryTime(1));
    answered = exchange(query, &replies.query_reply);
  }
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  if (!answered) {
    return absl::UnavailableError(
        absl::StrCat("recording the service's answers for the echo: ",
                     status.error_message()));
  }
  return replies;
}

int ServeEcho(const EchoReplies& replies) {
  EchoService service(replies);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "echo: cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::printf("%d\n", port);
  std::fflush(stdout);
  // Until the parent closes our stdin (or dies).
  char byte;
  while (read(STDIN_FILENO, &byte, 1) > 0) {
  }
  server->Shutdown();
  return 0;
}

absl::StatusOr<std::unique_ptr<EchoProcess>> EchoProcess::Launch(
    const std::vector<std::string>& argv) {
  int to_child[2];
  int from_child[2];
  if (pipe(to_child) != 0) return absl::InternalError("pipe failed");
  if (pipe(from_child) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return absl::InternalError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr,
                                  args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (spawned != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return absl::InternalError("cannot start the echo process");
  }
  // The child's first line is its port; EOF first means it failed.
  std::string line;
  char c;
  while (read(from_child[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  close(from_child[0]);
  int port = 0;
  auto process =
      std::unique_ptr<EchoProcess>(new EchoProcess(pid, to_child[1], 0));
  if (!absl::SimpleAtoi(line, &port) || port <= 0) {
    return absl::UnavailableError("the echo process did not start (above)");
  }
  process->port_ = port;
  return process;
}

EchoProcess::~EchoProcess() {
  close(to_child_);
  int status = 0;
  waitpid(pid_, &status, 0);
}

}  // namespace posewire::load
