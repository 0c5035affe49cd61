#include "clients/load/local_senders.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>

#include "clients/load/frame_encoder.h"
#include "google/protobuf/arena.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"

namespace posewire::load {
namespace {

// ------------------------------------------------------------ in process --
//
// The same senders without gRPC, on as many threads as the server has
// solver threads: each thread serves its share of the senders in order of
// when their next message is due, as the server's worker pool would. A
// message counts from when its sender would have sent it (open loop: when
// its previous answer came), so time queued behind another sender's
// message counts, as it does in the server's pool.

class LocalSender {
 public:
  LocalSender(const Phase& phase, int index, SenderResult& r)
      : phase_(phase), r_(r), index_(index) {}
  virtual ~LocalSender() = default;

  // Prepares the first message; false if the sender cannot start.
  virtual bool Begin() {
    pacer_ = Pacer(phase_.config.rate, index_, phase_.config.senders);
    send_ = pacer_.Next(Clock::now());
    return true;
  }
  // Handles one message, due at send_time().
  void HandleNext() {
    Sent(r_, phase_.live);
    int64_t ok_characters = 0;
    const int code = Handle(&ok_characters);
    const Clock::time_point answered = Clock::now();
    Record(r_, phase_.live, send_, answered, code, ok_characters);
    send_ = pacer_.Next(answered);
  }
  Clock::time_point send_time() const { return send_; }

 protected:
  virtual int Handle(int64_t* ok_characters) = 0;

  const Phase& phase_;
  SenderResult& r_;

 private:
  const int index_;
  Pacer pacer_{0, 0, 1};
  Clock::time_point send_;
};

class LocalStream final : public LocalSender {
 public:
  // `shared`: what the phase's streams share, as the server's sessions do.
  LocalStream(const server::ServerConfig& config, server::SessionShared& shared,
              const Phase& phase, int index, SenderResult& r)
      : LocalSender(phase, index, r),
        session_(config, nullptr, &shared),
        frames_(phase.workload.frames),
        queries_(phase.workload.queries) {}

  bool Begin() override {
    for (const v1::SessionRequest& reg : phase_.workload.registrations) {
      v1::SessionResponse* response = FreshResponse();
      session_.Handle(reg, response);
      if (const int code = RegisteredCode(*response); code != 0) {
        CountError(r_, phase_.live, code);
        return false;
      }
    }
    return LocalSender::Begin();
  }

 private:
  int Handle(int64_t* ok_characters) override {
    const size_t v = sequence_ % frames_.size();
    v1::SessionRequest& request = frames_[v];
    request.mutable_frame()->set_sequence(++sequence_);
    const Workload& w = phase_.workload;
    if (w.seconds_per_frame > 0.0) {
      request.mutable_frame()->set_time(
          TickTime(sequence_, w.seconds_per_frame));
    }
    v1::SessionResponse* response = FreshResponse();
    session_.Handle(request, response);
    const int code = FrameCode(*response, ok_characters);
    if (code != 0 || queries_.empty()) return code;
    // A referee tick: the frame, then its hit query.
    v1::SessionRequest& query = queries_[v];
    query.mutable_query()->set_time(w.QueryTime(sequence_));
    response = FreshResponse();
    session_.Handle(query, response);
    return QueryCode(*response);
  }

  // An empty response on an arena reset per message, as the server builds
  // its answers (server/posewire_service.cc, MessagePair), so both sides
  // pay the same for building them.
  v1::SessionResponse* FreshResponse() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<v1::SessionResponse>(&arena_);
  }

  server::Session session_;
  std::vector<v1::SessionRequest> frames_;
  std::vector<v1::SessionRequest> queries_;
  google::protobuf::Arena arena_;
  uint64_t sequence_ = 0;
};

class LocalUnary final : public LocalSender {
 public:
  LocalUnary(const server::ServerConfig& config, server::SkeletonCache& cache,
             const Phase& phase, int index, SenderResult& r)
      : LocalSender(phase, index, r),
        config_(config),
        cache_(cache),
        by_hash_(phase.workload.solve_by_hash),
        inline_(phase.workload.solve_inline) {}

 private:
  int Handle(int64_t* ok_characters) override {
    const size_t v = n_ % by_hash_.size();
    absl::Status status;
    for (int attempt = 0; attempt < 2; ++attempt) {
      response_.Clear();
      status = server::Solve(known_ ? by_hash_[v] : inline_[v], config_, cache_,
                             never_stop_, &response_);
      if (known_ && absl::IsNotFound(status)) {
        known_ = false;
        continue;
      }
      break;
    }
    if (status.ok()) known_ = true;
    *ok_characters = status.ok() ? response_.characters_size() : 0;
    const size_t next = ++n_ % by_hash_.size();
    CarryState(response_, known_ ? by_hash_[next] : inline_[next]);
    return static_cast<int>(status.code());
  }

  const server::ServerConfig& config_;
  server::SkeletonCache& cache_;
  const server::StopCheck never_stop_ = [] { return absl::OkStatus(); };
  std::vector<v1::SolveRequest> by_hash_;
  std::vector<v1::SolveRequest> inline_;
  v1::SolveResponse response_;
  uint64_t n_ = 0;
  bool known_ = false;
};

// One baseline thread: its senders, earliest due first, until every next
// message would go out after the phase's end.
void LocalWorker(const Phase& phase, std::vector<LocalSender*> senders) {
  std::vector<LocalSender*> active;
  for (LocalSender* s : senders) {
    if (s->Begin()) active.push_back(s);
  }
  while (!active.empty()) {
    auto next = std::min_element(active.begin(), active.end(),
                                 [](LocalSender* a, LocalSender* b) {
                                   return a->send_time() < b->send_time();
                                 });
    LocalSender* s = *next;
    if (s->send_time() >= phase.end) {
      active.erase(next);
      continue;
    }
    std::this_thread::sleep_until(s->send_time());
    s->HandleNext();
  }
}

}  // namespace

void RunInProcess(const Phase& phase, int threads,
                  std::vector<SenderResult>& results) {
  // The server's defaults: the same limits the service enforces.
  const server::ServerConfig config;
  server::SkeletonCache cache(config.skeleton_cache_size);
  server::SessionShared shared(config.skeleton_cache_size);
  const int n = phase.config.senders;
  std::vector<std::unique_ptr<LocalSender>> senders;
  for (int i = 0; i < n; ++i) {
    if (phase.config.stream) {
      senders.push_back(
          std::make_unique<LocalStream>(config, shared, phase, i, results[i]));
    } else {
      senders.push_back(
          std::make_unique<LocalUnary>(config, cache, phase, i, results[i]));
    }
  }
  threads = std::clamp(threads, 1, n);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    std::vector<LocalSender*> mine;
    for (int i = t; i < n; i += threads) mine.push_back(senders[i].get());
    workers.emplace_back(LocalWorker, std::cref(phase), std::move(mine));
  }
  for (std::thread& t : workers) t.join();
}

}  // namespace posewire::load
