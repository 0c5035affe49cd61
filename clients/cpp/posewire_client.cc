#include "clients/cpp/posewire_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

namespace posewire::client {

absl::Status FromWire(const v1::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      status.message());
}

namespace {

void AddToken(grpc::ClientContext& context, const ClientOptions& options) {
  if (!options.token.empty()) {
    context.AddMetadata("authorization",
                        absl::StrCat("Bearer ", options.token));
  }
}

// How the client tried to connect, for a connection failure: the address
// alone rarely explains it, TLS against a plaintext server (or the reverse)
// fails the same way a stopped server does.
std::string Attempt(absl::string_view target, const ClientOptions& options) {
  std::string attempt = target.empty()
                            ? std::string("the posewire server")
                            : absl::StrCat("a posewire server at ", target);
  if (!options.tls) return absl::StrCat(attempt, " (plaintext, no TLS)");
  absl::StrAppend(&attempt, " (TLS, trusting ",
                  options.tls_root_certificates.empty()
                      ? "the system's certificate authorities"
                      : "the given certificate authority");
  if (!options.tls_server_name.empty()) {
    absl::StrAppend(&attempt, ", certificate name ", options.tls_server_name);
  }
  return absl::StrCat(attempt, ")");
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::shared_ptr<grpc::Channel> CreateChannel(const std::string& target,
                                             const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (!options.tls) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                     args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.tls_root_certificates;
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

absl::Status CallError(const grpc::Status& status, grpc::Channel& channel,
                       absl::string_view target, const ClientOptions& options) {
  const bool no_connection =
      (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
       status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) &&
      channel.GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_READY;
  if (!no_connection) return FromGrpc(status);
  const std::string listen =
      target.empty() ? std::string("HOST:PORT") : std::string(target);
  return absl::Status(
      static_cast<absl::StatusCode>(status.error_code()),
      absl::StrCat(
          "cannot reach ", Attempt(target, options), ": ",
          status.error_message(),
          ". Is posewire-server running there (posewire-server --listen=",
          listen, ")? ",
          options.tls ? "Does it serve TLS (--tls_cert) with a certificate "
                        "that CA signed for that name?"
                      : "If it serves TLS (--tls_cert), connect with TLS."));
}

std::unique_ptr<Client> Client::Connect(const std::string& target,
                                        const ClientOptions& options) {
  return std::unique_ptr<Client>(
      new Client(CreateChannel(target, options), options, target));
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : Client(std::move(channel), options, "") {}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options, std::string target)
    : channel_(std::move(channel)),
      target_(std::move(target)),
      stub_(v1::PoseWire::NewStub(channel_)),
      options_(options) {}

void Client::PrepareContext(grpc::ClientContext& context) const {
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  AddToken(context, options_);
}

absl::Status Client::CallError(const grpc::Status& status) const {
  return client::CallError(status, *channel_, target_, options_);
}

absl::StatusOr<v1::GetInfoResponse> Client::GetInfo() {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::GetInfoResponse response;
  absl::Status status = CallError(stub_->GetInfo(&context, {}, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::SolveResponse> Client::Solve(
    const v1::SolveRequest& request) {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::SolveResponse response;
  absl::Status status = CallError(stub_->Solve(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::LearnLimitsResponse> Client::LearnLimits(
    const v1::LearnLimitsRequest& request) {
  return Unary(request, &v1::PoseWire::Stub::LearnLimits);
}

absl::StatusOr<v1::QueryResult> Client::Query(const v1::QueryRequest& request) {
  return Unary(request, &v1::PoseWire::Stub::Query);
}

absl::Status Client::BakeEach(
    const v1::BakeRequest& request,
    const std::function<bool(v1::BakeResponse&)>& on_message) {
  grpc::ClientContext context;
  AddToken(context, options_);
  std::unique_ptr<grpc::ClientReader<v1::BakeResponse>> reader =
      stub_->Bake(&context, request);
  v1::BakeResponse message;
  uint32_t done = 0;
  uint32_t total = 0;
  bool cancelled = false;
  while (reader->Read(&message)) {
    total = message.frames_total();
    if (!on_message(message)) {
      cancelled = true;
      context.TryCancel();
      break;
    }
    done = message.frames_done();
  }
  const grpc::Status status = reader->Finish();
  if (cancelled) {
    return absl::CancelledError(absl::StrCat(
        "bake cancelled by the caller after ", done, " of ", total, " frames"));
  }
  return CallError(status);
}

absl::StatusOr<v1::BakeResponse> Client::Bake(
    const v1::BakeRequest& request,
    const std::function<bool(const v1::BakeResponse&)>& on_message) {
  v1::BakeResponse all;
  const absl::Status status = BakeEach(request, [&](v1::BakeResponse& message) {
    if (on_message && !on_message(message)) return false;
    for (v1::BakedFrame& frame : *message.mutable_frames()) {
      *all.add_frames() = std::move(frame);
    }
    all.set_frames_done(message.frames_done());
    all.set_frames_total(message.frames_total());
    if (message.done()) {
      all.set_done(true);
      *all.mutable_state() = std::move(*message.mutable_state());
      all.set_skeleton_hash(message.skeleton_hash());
    }
    return true;
  });
  if (!status.ok()) return status;
  return all;
}

absl::StatusOr<v1::SolveResponse> Client::SolveWithSkeletonCache(
    v1::SolveRequest request) {
  // The inline skeletons, kept to resend if the server lost their hashes.
  std::vector<std::pair<int, v1::Skeleton>> inline_skeletons;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < request.characters_size(); ++i) {
      v1::SkeletonRef* ref = request.mutable_characters(i)->mutable_skeleton();
      if (!ref->has_skeleton()) continue;
      // The hash is computed on the converted skeleton, exactly as the
      // server does, once per distinct skeleton message (a batch usually
      // repeats one); a skeleton that does not convert is sent inline so the
      // server explains what is wrong with it.
      const std::string bytes = ref->skeleton().SerializeAsString();
      auto cached = hash_by_message_.find(bytes);
      if (cached == hash_by_message_.end()) {
        auto skeleton =
            server::SkeletonFromProto(ref->skeleton(), kMaxSkeletonJoints, "");
        if (!skeleton.ok()) continue;
        // Bounded: a client cycling through many rigs must not grow it
        // without limit.
        if (hash_by_message_.size() >= 1024) hash_by_message_.clear();
        cached =
            hash_by_message_.emplace(bytes, server::SkeletonHash(*skeleton))
                .first;
      }
      const std::string& hash = cached->second;
      if (!known_hashes_.contains(hash)) continue;
      inline_skeletons.emplace_back(i, std::move(*ref->mutable_skeleton()));
      ref->set_hash(hash);
    }
  }
  auto response = Solve(request);
  if (absl::IsNotFound(response.status()) && !inline_skeletons.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [index, skeleton] : inline_skeletons) {
      v1::SkeletonRef* ref =
          request.mutable_characters(index)->mutable_skeleton();
      known_hashes_.erase(ref->hash());
      *ref->mutable_skeleton() = std::move(skeleton);
    }
  }
  if (absl::IsNotFound(response.status()) && !inline_skeletons.empty()) {
    response = Solve(request);
  }
  if (response.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const v1::CharacterOutput& out : response->characters()) {
      known_hashes_.insert(out.skeleton_hash());
    }
  }
  return response;
}

absl::StatusOr<std::unique_ptr<Session>> Client::OpenSession(
    const SessionOptions& session_options) {
  auto session = std::unique_ptr<Session>(new Session());
  session->channel_ = channel_;
  session->target_ = target_;
  session->options_ = options_;
  session->session_options_ = session_options;
  session->stub_ = v1::PoseWire::NewStub(channel_);
  if (absl::Status s = session->OpenStream(); !s.ok()) return s;
  return session;
}

absl::StatusOr<std::unique_ptr<Session>> Client::ResumeSession(
    const ResumePoint& point, const SessionOptions& session_options) {
  auto session = OpenSession(session_options);
  if (!session.ok()) return session.status();
  v1::SessionRequest request;
  request.mutable_resume()->set_snapshot(point.snapshot.data());
  if (absl::Status s = (*session)->Resume(request, point.registrations);
      !s.ok()) {
    return s;
  }
  (*session)->latest_snapshot_ = point.snapshot;
  (*session)->last_sequence_ = point.snapshot.after_sequence();
  (*session)->replay_log_.clear();
  return session;
}

Session::~Session() {
  if (!closed_ && !stream_ended_) {
    context_->TryCancel();
    stream_->Finish().ok();
  }
}

absl::Status Session::OpenStream() {
  context_ = std::make_unique<grpc::ClientContext>();
  // No deadline: a session lasts as long as its user keeps it.
  AddToken(*context_, options_);
  stream_ = stub_->Session(context_.get());
  if (stream_ == nullptr) {
    return absl::UnavailableError("could not open a session stream");
  }
  stream_ended_ = false;
  handed_over_ = false;
  return absl::OkStatus();
}

namespace {

bool IsHandover(const v1::SessionResponse& response) {
  return response.has_snapshot() && response.snapshot().handover();
}

// How a stream ends when its server goes away rather than refuses:
// UNAVAILABLE (killed, unreachable, a hand-over), CANCELLED (gRPC cuts
// what is left when a shutdown's grace runs out, and refuses a stream that
// reaches a connection whose server has begun to shut down; this client
// never cancels a live session itself), or a stream reset by a proxy whose
// upstream died (nginx sends RST_STREAM INTERNAL_ERROR, which gRPC reports
// as INTERNAL "Received RST_STREAM with error code 2").
bool ServerWentAway(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsCancelled(status) ||
         (absl::IsInternal(status) &&
          absl::StartsWith(status.message(), "Received RST_STREAM"));
}

}  // namespace

absl::StatusOr<v1::SessionResponse> Session::Exchange(
    const v1::SessionRequest& request) {
  if (stream_ended_) return end_status_;
  v1::SessionResponse response;
  // A failed write may still leave the hand-over to read.
  const bool wrote = stream_->Write(request);
  if (stream_->Read(&response)) {
    if (!IsHandover(response)) {
      if (wrote) return response;
    } else {
      handed_over_ = true;
      // A refused one (a resume still waiting) leaves the previous.
      if (response.snapshot().status().code() == 0) {
        TakeSnapshot(std::move(*response.mutable_snapshot()));
      }
    }
  }
  return EndStream();
}

absl::Status Session::EndStream() {
  stream_ended_ = true;
  end_status_ = Finish();
  if (handed_over_) {
    // The server ends a hand-over UNAVAILABLE, but a shutdown racing the
    // status to the client can surface as CANCELLED: the hand-over itself
    // says what happened.
    end_status_ = absl::UnavailableError(
        "the server is shutting down and handed the session over");
  } else if (end_status_.ok()) {
    end_status_ = absl::UnavailableError("the session stream closed");
  }
  return end_status_;
}

absl::StatusOr<v1::SessionResponse> Session::Call(
    const v1::SessionRequest& request) {
  if (closed_) return absl::FailedPreconditionError("the session is closed");
  // Each pass after the first follows a resume that succeeded and a
  // stream that broke again at once; bounded, so a flapping server cannot
  // hold the caller forever.
  for (int pass = 0;; ++pass) {
    if (pass > session_options_.max_attempts) return end_status_;
    if (stream_ended_) {
      if (!session_options_.auto_resume || !ServerWentAway(end_status_)) {
        return end_status_;
      }
      if (absl::Status s = Reconnect(end_status_); !s.ok()) {
        end_status_ = s;
        return s;
      }
    }
    auto response = Exchange(request);
    if (response.ok()) {
      LogForReplay(request, *response);
      return response;
    }
    if (!session_options_.auto_resume || !ServerWentAway(end_status_)) {
      return response.status();
    }
  }
}

void Session::LogForReplay(const v1::SessionRequest& request,
                           const v1::SessionResponse& response) {
  if (!session_options_.auto_resume) return;
  bool accepted = false;
  switch (request.message_case()) {
    case v1::SessionRequest::kRegisterSkeleton:
    case v1::SessionRequest::kRegisterClip:
    case v1::SessionRequest::kRegisterRig:
    case v1::SessionRequest::kRegisterCharacter:
    case v1::SessionRequest::kRegisterHitboxes:
    case v1::SessionRequest::kRegisterLimits:
      accepted = response.registered().status().code() == 0;
      break;
    case v1::SessionRequest::kFrame:
      // A refused frame (bad sequence, bad dt) changed nothing; one with
      // per-character errors advanced the session.
      accepted = response.frame().status().code() == 0;
      break;
    default:
      break;
  }
  if (accepted) replay_log_.push_back(request);
}

void Session::TakeSnapshot(v1::SessionSnapshot snapshot) {
  latest_snapshot_ = std::move(snapshot);
  replay_log_.clear();
}

absl::Status Session::Reconnect(absl::Status cause) {
  const absl::Time started = absl::Now();
  const bool handover = handed_over_;
  absl::Duration backoff = session_options_.first_backoff;
  absl::Status last = cause;
  for (int attempt = 1; attempt <= session_options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      ++counters_.failed_attempts;
      absl::SleepFor(backoff);
      backoff = std::min(backoff * 2, session_options_.max_backoff);
    }
    if (!channel_->WaitForConnected(absl::ToChronoTime(
            absl::Now() + session_options_.connect_timeout))) {
      last = absl::UnavailableError(
          absl::StrCat("no server answered within ",
                       absl::FormatDuration(session_options_.connect_timeout)));
      continue;
    }
    if (absl::Status s = OpenStream(); !s.ok()) {
      last = s;
      continue;
    }
    int replayed = 0;
    const uint64_t resumed_from = latest_snapshot_.after_sequence();
    last = ResumeOnNewStream(replayed);
    if (last.ok()) {
      ++counters_.resumes;
      counters_.handovers += handover ? 1 : 0;
      counters_.replayed += replayed;
      if (session_options_.on_resume) {
        session_options_.on_resume(ResumeEvent{.cause = cause,
                                               .handover = handover,
                                               .after_sequence = resumed_from,
                                               .replayed = replayed,
                                               .attempts = attempt,
                                               .took = absl::Now() - started});
      }
      return absl::OkStatus();
    }
    // A refusal (a damaged snapshot, a registration that no longer
    // matches) will not go away by retrying.
    if (!ServerWentAway(last)) break;
  }
  return absl::Status(last.code(),
                      absl::StrCat("the session could not be resumed after its "
                                   "stream ended (",
                                   cause.message(), "): ", last.message()));
}

absl::Status Session::ResumeOnNewStream(int& replayed) {
  if (!latest_snapshot_.data().empty()) {
    v1::SessionRequest resume;
    resume.mutable_resume()->set_snapshot(latest_snapshot_.data());
    if (absl::Status s = Resume(resume, latest_resume_point().registrations);
        !s.ok()) {
      return s;
    }
  }
  // What was answered since the snapshot, in order; the answers are known.
  const std::vector<v1::SessionRequest> log = std::move(replay_log_);
  replay_log_.clear();
  for (size_t i = 0; i < log.size(); ++i) {
    auto response = Exchange(log[i]);
    if (!response.ok()) {
      // Broken again: a hand-over covers what was replayed; the rest is
      // still to replay.
      replay_log_.insert(replay_log_.end(), log.begin() + i, log.end());
      return response.status();
    }
    replay_log_.push_back(log[i]);
    ++replayed;
  }
  // Periodic snapshots are per stream: ask again, which also takes one
  // covering the replay.
  const uint32_t every = snapshot_every_;
  if (every > 0) {
    v1::SessionRequest request;
    request.mutable_snapshot()->set_every_frames(every);
    auto response = Exchange(request);
    if (!response.ok()) return response.status();
    if (response->snapshot().status().code() == 0) {
      TakeSnapshot(std::move(*response->mutable_snapshot()));
    }
    frames_since_snapshot_ = 0;
  }
  return absl::OkStatus();
}

absl::Status Session::Finish() {
  return CallError(stream_->Finish(), *channel_, target_, options_);
}

namespace {

// A registration's identity in a session: clip ids are per skeleton.
std::string RegistrationKey(absl::string_view kind,
                            absl::string_view skeleton_id,
                            absl::string_view id) {
  return absl::StrCat(kind, "/", skeleton_id, "/", id);
}

// The key of a register_* request other than a character ("" for those:
// a snapshot carries characters whole).
std::string RegistrationKey(const v1::SessionRequest& request) {
  switch (request.message_case()) {
    case v1::SessionRequest::kRegisterSkeleton:
      return RegistrationKey("skeleton", "", request.register_skeleton().id());
    case v1::SessionRequest::kRegisterClip:
      return RegistrationKey("clip", request.register_clip().skeleton_id(),
                             request.register_clip().id());
    case v1::SessionRequest::kRegisterRig:
      return RegistrationKey("rig", "", request.register_rig().id());
    case v1::SessionRequest::kRegisterHitboxes:
      return RegistrationKey("hitboxes", "", request.register_hitboxes().id());
    case v1::SessionRequest::kRegisterLimits:
      return RegistrationKey("limits", "", request.register_limits().id());
    default:
      return "";
  }
}

std::string RegistrationKey(const v1::SnapshotRegistration& r) {
  return RegistrationKey(r.kind(), r.skeleton_id(), r.id());
}

}  // namespace

absl::Status Session::Register(const v1::SessionRequest& request) {
  auto response = Call(request);
  if (!response.ok()) return response.status();
  absl::Status status = FromWire(response->registered().status());
  if (status.ok()) Keep(request);
  return status;
}

void Session::Keep(const v1::SessionRequest& request) {
  std::string key = RegistrationKey(request);
  if (!key.empty()) registrations_[std::move(key)] = request;
}

absl::Status Session::Resume(
    const v1::SessionRequest& request,
    const std::vector<v1::SessionRequest>& registrations) {
  auto response = Exchange(request);
  if (!response.ok()) return response.status();
  if (absl::Status s = FromWire(response->resume().status()); !s.ok()) {
    return s;
  }
  absl::flat_hash_map<std::string, const v1::SessionRequest*> by_key;
  for (const v1::SessionRequest& r : registrations) {
    by_key[RegistrationKey(r)] = &r;
  }
  for (const v1::SnapshotRegistration& missing : response->resume().missing()) {
    auto it = by_key.find(RegistrationKey(missing));
    if (it == by_key.end()) {
      return absl::NotFoundError(absl::StrCat(
          "resume: the server asks for ", missing.kind(), " '", missing.id(),
          "', which the resume point does not hold"));
    }
    auto registered = Exchange(*it->second);
    if (!registered.ok()) return registered.status();
    if (absl::Status s = FromWire(registered->registered().status()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SessionSnapshot> Session::Snapshot(uint32_t every_frames) {
  v1::SessionRequest request;
  request.mutable_snapshot()->set_every_frames(every_frames);
  auto response = Call(request);
  if (!response.ok()) return response.status();
  if (absl::Status s = FromWire(response->snapshot().status()); !s.ok()) {
    return s;
  }
  snapshot_every_ = every_frames;
  frames_since_snapshot_ = 0;
  TakeSnapshot(response->snapshot());
  return std::move(*response->mutable_snapshot());
}

ResumePoint Session::latest_resume_point() const {
  ResumePoint point{.snapshot = latest_snapshot_, .registrations = {}};
  for (const v1::SnapshotRegistration& r : latest_snapshot_.registrations()) {
    auto it = registrations_.find(RegistrationKey(r));
    if (it != registrations_.end()) point.registrations.push_back(it->second);
  }
  return point;
}

absl::Status Session::RegisterSkeleton(const std::string& id,
                                       const Skeleton& skeleton) {
  v1::SessionRequest request;
  request.mutable_register_skeleton()->set_id(id);
  server::SkeletonToProto(
      skeleton, request.mutable_register_skeleton()->mutable_skeleton());
  return Register(request);
}

absl::Status Session::RegisterClip(const std::string& id,
                                   const std::string& skeleton_id,
                                   const Clip& clip) {
  v1::SessionRequest request;
  request.mutable_register_clip()->set_id(id);
  request.mutable_register_clip()->set_skeleton_id(skeleton_id);
  server::ClipToProto(clip, request.mutable_register_clip()->mutable_clip());
  return Register(request);
}

absl::Status Session::RegisterRig(
    const std::string& id, const std::string& skeleton_id,
    const google::protobuf::RepeatedPtrField<v1::Operation>& ops) {
  v1::SessionRequest request;
  request.mutable_register_rig()->set_id(id);
  request.mutable_register_rig()->set_skeleton_id(skeleton_id);
  *request.mutable_register_rig()->mutable_ops() = ops;
  return Register(request);
}

absl::Status Session::RegisterCharacter(const std::string& id,
                                        const std::string& rig_id) {
  v1::SessionRequest request;
  request.mutable_register_character()->set_id(id);
  request.mutable_register_character()->set_rig_id(rig_id);
  return Register(request);
}

absl::Status Session::RegisterLimits(
    const std::string& id, const std::string& skeleton_id,
    const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& limits) {
  v1::SessionRequest request;
  request.mutable_register_limits()->set_id(id);
  request.mutable_register_limits()->set_skeleton_id(skeleton_id);
  *request.mutable_register_limits()->mutable_limits() = limits;
  return Register(request);
}

absl::StatusOr<v1::LearnLimitsResponse> Session::LearnLimits(
    const std::string& id, const std::string& skeleton_id,
    const std::vector<std::string>& clip_ids,
    const v1::LearnLimitsOptions& options) {
  v1::SessionRequest request;
  v1::RegisterLimits* message = request.mutable_register_limits();
  message->set_id(id);
  message->set_skeleton_id(skeleton_id);
  for (const std::string& clip : clip_ids) message->add_learn_from_clips(clip);
  *message->mutable_learn_options() = options;
  auto response = Call(request);
  if (!response.ok()) return response.status();
  if (absl::Status s = FromWire(response->registered().status()); !s.ok()) {
    return s;
  }
  Keep(request);
  return std::move(*response->mutable_registered()->mutable_learned());
}

absl::Status Session::RegisterHitboxes(
    const std::string& id, const std::string& skeleton_id,
    const google::protobuf::RepeatedPtrField<v1::Hitbox>& hitboxes) {
  v1::SessionRequest request;
  request.mutable_register_hitboxes()->set_id(id);
  request.mutable_register_hitboxes()->set_skeleton_id(skeleton_id);
  *request.mutable_register_hitboxes()->mutable_hitboxes() = hitboxes;
  return Register(request);
}

absl::StatusOr<v1::QueryResult> Session::Query(const v1::HitQuery& query) {
  v1::SessionRequest request;
  *request.mutable_query() = query;
  auto response = Call(request);
  if (!response.ok()) return response.status();
  if (absl::Status s = FromWire(response->query().status()); !s.ok()) return s;
  return std::move(*response->mutable_query());
}

absl::StatusOr<v1::FrameResult> Session::SendFrame(const v1::Frame& frame) {
  // Resuming needs snapshots: without them every frame would be kept.
  if (session_options_.auto_resume && snapshot_every_ == 0 &&
      session_options_.snapshot_every_frames > 0) {
    if (auto s = Snapshot(session_options_.snapshot_every_frames); !s.ok()) {
      return s.status();
    }
  }
  v1::SessionRequest request;
  *request.mutable_frame() = frame;
  auto response = Call(request);
  if (!response.ok()) return response.status();
  if (absl::Status s = FromWire(response->frame().status()); !s.ok()) return s;
  last_sequence_ = frame.sequence();
  // The server follows every snapshot_every_-th accepted frame's answer
  // with a snapshot.
  if (snapshot_every_ > 0 && ++frames_since_snapshot_ >= snapshot_every_) {
    frames_since_snapshot_ = 0;
    v1::SessionResponse snapshot;
    if (!stream_->Read(&snapshot)) {
      // The frame was answered; the stream's end shows on the next call
      // (which resumes, with auto_resume).
      if (absl::Status s = EndStream(); !session_options_.auto_resume) {
        return s;
      }
    } else if (snapshot.snapshot().status().code() == 0) {
      // A refused one (over the size limit) leaves the previous in place.
      TakeSnapshot(std::move(*snapshot.mutable_snapshot()));
    }
  }
  return std::move(*response->mutable_frame());
}

absl::Status Session::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  if (stream_ended_) return absl::OkStatus();  // its calls saw the status
  stream_->WritesDone();
  return Finish();
}

}  // namespace posewire::client
