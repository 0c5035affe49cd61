// C++ client library for posewire.v1: GetInfo, unary Solve (with the
// skeleton-by-hash protocol handled for you) and streaming sessions.
//
//   auto client = posewire::client::Client::Connect("127.0.0.1:50051");
//   auto info = client->GetInfo();
//   auto session = client->OpenSession();
//   session->RegisterSkeleton("cmu", skeleton);
#ifndef POSEWIRE_CLIENTS_CPP_POSEWIRE_CLIENT_H_
#define POSEWIRE_CLIENTS_CPP_POSEWIRE_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"

namespace posewire::client {

struct ClientOptions {
  // Deadline of each unary call.
  absl::Duration timeout = absl::Seconds(10);
  // Largest message sent or received; match the server's limit.
  int max_message_bytes = 16 << 20;
  // Sent as "authorization: Bearer <token>" on every call (a server started
  // with --auth_token_file wants it); empty: no token.
  std::string token;
  // Connect with TLS, trusting the certificate authorities of
  // `tls_root_certificates` (PEM; empty: the system's).
  bool tls = false;
  std::string tls_root_certificates;
  // The name the server's certificate must carry when it is not the host of
  // the target (e.g. connecting by IP to a certificate for a DNS name).
  std::string tls_server_name;
};

// A gRPC status as an absl::Status (same code, same message).
absl::Status FromGrpc(const grpc::Status& status);

// The channel Client::Connect opens: TLS or not, message limits.
std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target,
                                             const ClientOptions& options);

// A failed call as the caller should see it. A call that failed because no
// connection could be made (UNAVAILABLE or DEADLINE_EXCEEDED while the
// channel is not READY) keeps its code, and its message says what was tried
// and what to check: "cannot reach a posewire server at 127.0.0.1:50051
// (plaintext): <gRPC's reason>; is posewire-server running there ...". Any
// other status is FromGrpc(status).
absl::Status CallError(const grpc::Status& status, grpc::Channel& channel,
                       absl::string_view target, const ClientOptions& options);

class Session;

class Client {
 public:
  static std::unique_ptr<Client> Connect(const std::string& target,
                                         const ClientOptions& options = {});
  // Uses an existing channel (for tests or custom credentials).
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);

  absl::StatusOr<v1::GetInfoResponse> GetInfo();

  // Sends `request` as is.
  absl::StatusOr<v1::SolveResponse> Solve(const v1::SolveRequest& request);

  // Like Solve, but sends each inline skeleton the server already has as its
  // content hash, and resends it inline once if the server answers NOT_FOUND
  // (it evicted it). Learns hashes from responses.
  absl::StatusOr<v1::SolveResponse> SolveWithSkeletonCache(
      v1::SolveRequest request);

  // Opens a streaming session.
  absl::StatusOr<std::unique_ptr<Session>> OpenSession();

  // For calls the class does not wrap (e.g. grpc.health.v1 on channel()):
  // sets the deadline and the token, and explains a failed call as the
  // wrapped calls do.
  void PrepareContext(grpc::ClientContext& context) const;
  absl::Status CallError(const grpc::Status& status) const;
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options,
         std::string target);

  std::shared_ptr<grpc::Channel> channel_;
  // What Connect was given; empty for a Client made on a channel.
  std::string target_;
  std::unique_ptr<v1::PoseWire::Stub> stub_;
  ClientOptions options_;
  std::mutex mutex_;
  absl::flat_hash_set<std::string> known_hashes_;
  // Serialized skeleton message -> its content hash, so a batch that repeats
  // a skeleton converts and hashes it once.
  absl::flat_hash_map<std::string, std::string> hash_by_message_;
};

// A synchronous session: each call sends one message and waits for its
// answer (the server answers every message, in order). Not thread-safe.
class Session {
 public:
  ~Session();

  absl::Status RegisterSkeleton(const std::string& id,
                                const Skeleton& skeleton);
  absl::Status RegisterClip(const std::string& id,
                            const std::string& skeleton_id, const Clip& clip);
  absl::Status RegisterRig(
      const std::string& id, const std::string& skeleton_id,
      const google::protobuf::RepeatedPtrField<v1::Operation>& ops);
  absl::Status RegisterCharacter(const std::string& id,
                                 const std::string& rig_id);

  // Sends a frame; the result carries per-character statuses. A frame-level
  // error (out-of-order sequence, bad dt) is returned as the error.
  absl::StatusOr<v1::FrameResult> SendFrame(const v1::Frame& frame);

  // Sends any request and returns its response.
  absl::StatusOr<v1::SessionResponse> Call(const v1::SessionRequest& request);

  // Half-closes and returns the stream's final status.
  absl::Status Close();

 private:
  friend class Client;
  Session() = default;
  absl::Status Register(const v1::SessionRequest& request);
  // The stream's final status, explained as the client's calls are.
  absl::Status Finish();

  // The client's channel, target and options, for Finish.
  std::shared_ptr<grpc::Channel> channel_;
  std::string target_;
  ClientOptions options_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>>
      stream_;
  bool closed_ = false;
};

}  // namespace posewire::client

#endif  // POSEWIRE_CLIENTS_CPP_POSEWIRE_CLIENT_H_
