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

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
// A status inside a posewire.v1 answer (e.g. CharacterResult.status) as an
// absl::Status.
absl::Status FromWire(const v1::Status& status);

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

// One automatic resume of a session (SessionOptions::auto_resume).
struct ResumeEvent {
  // Why the stream ended: UNAVAILABLE from a server that was killed or
  // became unreachable, or from one that drained and handed over.
  absl::Status cause;
  // The server drained and sent the session's state (no frame replayed
  // that it had answered) rather than vanishing.
  bool handover = false;
  // The frame the snapshot resumed from was taken after (0: no snapshot
  // yet; the session was rebuilt from its first message).
  uint64_t after_sequence = 0;
  // Messages replayed to rebuild the state past the snapshot (registrations
  // and frames already answered; their answers are not returned again).
  int replayed = 0;
  // Attempts made, counting the one that succeeded.
  int attempts = 0;
  // From noticing the broken stream to the resumed session.
  absl::Duration took;
};

// What a session's automatic resumes did so far.
struct ResumeCounters {
  int64_t resumes = 0;
  int64_t handovers = 0;  // of the resumes, after a server's hand-over
  int64_t replayed = 0;   // messages replayed over all resumes
  int64_t failed_attempts = 0;
};

struct SessionOptions {
  // Resume by itself when the stream ends UNAVAILABLE or CANCELLED (a
  // server killed, unreachable, draining, or past its shutdown grace), or
  // is reset by a proxy whose upstream died (nginx: INTERNAL "Received
  // RST_STREAM"): reconnect through the client's channel
  // (a balancer, or a channel over several replicas' addresses), resume
  // from the newest snapshot, replay what was answered since, and resend
  // the message in flight. Callers see only the answer, and on_resume.
  bool auto_resume = false;
  // With auto_resume: the server snapshots after every that many frames,
  // which bounds what is kept to replay. 0 leaves it to Snapshot().
  uint32_t snapshot_every_frames = 30;
  // Reconnect attempts per broken stream, with exponential backoff from
  // first_backoff up to max_backoff between them, each waiting up to
  // connect_timeout for the channel to connect.
  int max_attempts = 8;
  absl::Duration first_backoff = absl::Milliseconds(10);
  absl::Duration max_backoff = absl::Seconds(1);
  absl::Duration connect_timeout = absl::Seconds(2);
  // Called after each automatic resume (on the caller's thread).
  std::function<void(const ResumeEvent&)> on_resume;
};

// What a client keeps to resume a session on any server: a snapshot and the
// registrations it refers to (their content stays with the client; the
// snapshot holds only hashes).
struct ResumePoint {
  v1::SessionSnapshot snapshot;
  // Every registration the snapshot lists, as first sent.
  std::vector<v1::SessionRequest> registrations;
};

class Client {
 public:
  static std::unique_ptr<Client> Connect(const std::string& target,
                                         const ClientOptions& options = {});
  // Uses an existing channel (for tests or custom credentials).
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);

  absl::StatusOr<v1::GetInfoResponse> GetInfo();

  // Sends `request` as is.
  absl::StatusOr<v1::SolveResponse> Solve(const v1::SolveRequest& request);

  // Joint limits learnt from clips, to keep and send back as a
  // plausibility op's (or an IK op's) limits.
  absl::StatusOr<v1::LearnLimitsResponse> LearnLimits(
      const v1::LearnLimitsRequest& request);

  // A hit query without a session: each character's skeleton, hitboxes and
  // recorded frames come with the request (see the Query RPC).
  absl::StatusOr<v1::QueryResult> Query(const v1::QueryRequest& request);

  // Bakes a clip through a pipeline on the server (see the Bake RPC) and
  // returns every frame in order, with the final state and the skeleton's
  // hash, as one response. `on_message` (optional) sees each message as it
  // arrives, for progress (frames_done of frames_total); returning false
  // cancels the call, which then returns CANCELLED. No deadline is set
  // (ClientOptions::timeout is for one frame's worth of work, a bake may
  // run for minutes): cancel through `on_message`.
  absl::StatusOr<v1::BakeResponse> Bake(
      const v1::BakeRequest& request,
      const std::function<bool(const v1::BakeResponse&)>& on_message = {});

  // The same call without gathering: `on_message` gets each message as it
  // arrives (and may take its frames), for a consumer that writes frames
  // out as they come; returning false cancels (CANCELLED).
  absl::Status BakeEach(
      const v1::BakeRequest& request,
      const std::function<bool(v1::BakeResponse&)>& on_message);

  // Like Solve, but sends each inline skeleton the server already has as its
  // content hash, and resends it inline once if the server answers NOT_FOUND
  // (it evicted it). Learns hashes from responses.
  absl::StatusOr<v1::SolveResponse> SolveWithSkeletonCache(
      v1::SolveRequest request);

  // Opens a streaming session.
  absl::StatusOr<std::unique_ptr<Session>> OpenSession(
      const SessionOptions& session_options = {});

  // Opens a session that resumes from `point` (on this client's server,
  // which need not be the one that took the snapshot): sends the resume,
  // resends the registrations the server asks for, and returns the session
  // ready for frames after point.snapshot.after_sequence. A refusal (a
  // damaged or newer snapshot, a registration that no longer matches its
  // hash) is the server's status.
  absl::StatusOr<std::unique_ptr<Session>> ResumeSession(
      const ResumePoint& point, const SessionOptions& session_options = {});

  // For calls the class does not wrap (e.g. grpc.health.v1 on channel()):
  // sets the deadline and the token, and explains a failed call as the
  // wrapped calls do.
  void PrepareContext(grpc::ClientContext& context) const;
  absl::Status CallError(const grpc::Status& status) const;
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options,
         std::string target);

  // One unary call of the stub's `method`, with the deadline and token.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(
      const Request& request,
      grpc::Status (v1::PoseWire::Stub::*method)(grpc::ClientContext*,
                                                 const Request&, Response*)) {
    grpc::ClientContext context;
    PrepareContext(context);
    Response response;
    absl::Status status =
        CallError((stub_.get()->*method)(&context, request, &response));
    if (!status.ok()) return status;
    return response;
  }

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
  // A hitbox set for the characters of skeleton `skeleton_id`.
  absl::Status RegisterHitboxes(
      const std::string& id, const std::string& skeleton_id,
      const google::protobuf::RepeatedPtrField<v1::Hitbox>& hitboxes);

  // A limit set for the rigs of skeleton `skeleton_id`, which plausibility
  // ops name by PlausibilityOp.limits_id: the limits as sent (e.g. kept
  // from an earlier LearnLimits)...
  absl::Status RegisterLimits(
      const std::string& id, const std::string& skeleton_id,
      const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& limits);
  // ...or learnt on the server from clips this session registered for the
  // skeleton, returned for the caller to keep.
  absl::StatusOr<v1::LearnLimitsResponse> LearnLimits(
      const std::string& id, const std::string& skeleton_id,
      const std::vector<std::string>& clip_ids,
      const v1::LearnLimitsOptions& options = {});

  // Sends a frame; the result carries per-character statuses. A frame-level
  // error (out-of-order sequence, bad dt) is returned as the error.
  absl::StatusOr<v1::FrameResult> SendFrame(const v1::Frame& frame);

  // Rewinds characters to `query.time` and casts its rays and spheres; a
  // query-level error (outside the rewind window, a bad ray) is returned
  // as the error.
  absl::StatusOr<v1::QueryResult> Query(const v1::HitQuery& query);

  // Asks for a snapshot now and, with `every_frames` > 0, after every
  // that many frames the server accepts (SendFrame then reads each one and
  // keeps it as latest_resume_point()). The snapshot's status is the error.
  absl::StatusOr<v1::SessionSnapshot> Snapshot(uint32_t every_frames = 0);

  // The newest snapshot taken (by Snapshot or periodically) with the
  // registrations it lists; empty snapshot data before the first.
  ResumePoint latest_resume_point() const;

  // Sends any request and returns its response (resuming first, with
  // auto_resume, when the stream broke).
  absl::StatusOr<v1::SessionResponse> Call(const v1::SessionRequest& request);

  // Half-closes and returns the stream's final status.
  absl::Status Close();

  // What automatic resumes did (SessionOptions::auto_resume).
  const ResumeCounters& resume_counters() const { return counters_; }

  // The sequence of the last frame the server accepted (a resumed
  // session: its snapshot's after_sequence); 0 before any.
  uint64_t last_sequence() const { return last_sequence_; }

 private:
  friend class Client;
  Session() = default;
  // Opens a new stream on the channel (the first, or after a break).
  absl::Status OpenStream();
  absl::Status Register(const v1::SessionRequest& request);
  // Sends `request` (a resume), then resends from `registrations` what the
  // answer lists.
  absl::Status Resume(const v1::SessionRequest& request,
                      const std::vector<v1::SessionRequest>& registrations);
  // Keeps a registration the server accepted, for resuming later.
  void Keep(const v1::SessionRequest& request);
  // One request and its answer on the current stream, no resume. A
  // hand-over in its place (the server drains and did not read `request`)
  // becomes the latest snapshot, and the call fails with the stream's
  // UNAVAILABLE.
  absl::StatusOr<v1::SessionResponse> Exchange(
      const v1::SessionRequest& request);
  // After a stream ended with `cause`: reconnects, resumes from the latest
  // snapshot and replays what was answered since (auto_resume).
  // `cause` is taken by value: the attempts overwrite end_status_, which
  // is what callers pass.
  absl::Status Reconnect(absl::Status cause);
  absl::Status ResumeOnNewStream(int& replayed);
  // A new latest snapshot: what it covers need not be replayed.
  void TakeSnapshot(v1::SessionSnapshot snapshot);
  // Whether an answered request changed the session's state (a
  // registration or frame the server accepted): kept to replay.
  void LogForReplay(const v1::SessionRequest& request,
                    const v1::SessionResponse& response);
  // The stream's final status, explained as the client's calls are.
  absl::Status Finish();
  // Marks the stream ended with Finish's status (UNAVAILABLE if it was
  // OK: the server closed it without answering) and returns it.
  absl::Status EndStream();

  // The client's channel, target and options, for Finish.
  std::shared_ptr<grpc::Channel> channel_;
  std::string target_;
  ClientOptions options_;
  SessionOptions session_options_;
  std::unique_ptr<v1::PoseWire::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>>
      stream_;
  // The user closed the session.
  bool closed_ = false;
  // The stream ended (its status taken); with auto_resume the next call
  // reconnects first.
  bool stream_ended_ = false;
  absl::Status end_status_;
  bool handed_over_ = false;  // the stream that ended handed over
  // Accepted registrations and frames since latest_snapshot_ (all of them
  // before the first), in order: what a resume replays.
  std::vector<v1::SessionRequest> replay_log_;
  ResumeCounters counters_;
  // Accepted registrations by kind, skeleton (clips) and id
  // (RegistrationKey), kept to resend on a resume.
  absl::flat_hash_map<std::string, v1::SessionRequest> registrations_;
  v1::SessionSnapshot latest_snapshot_;
  // Periodic snapshots: the server's every_frames and the accepted frames
  // since the last one, counted as the server counts them.
  uint32_t snapshot_every_ = 0;
  uint32_t frames_since_snapshot_ = 0;
  uint64_t last_sequence_ = 0;
};

}  // namespace posewire::client

#endif  // POSEWIRE_CLIENTS_CPP_POSEWIRE_CLIENT_H_
