// Many characters' frames in one Session message per tick.
//
// A game server drives many characters, often from several threads, and
// each one's frame is ready at a different moment of the tick. Sending each
// in its own Session message pays a round trip per character; a
// FrameBatcher gathers them and sends one Frame per tick, then hands each
// caller its own character's result, bit for bit what a frame of its own
// would have given (a character's state advances by the frame's dt either
// way).
//
//   client::FrameBatcher batcher(*session, {.expected_characters = 64});
//   // per tick, per character (any thread):
//   auto result = batcher.Submit(std::move(character_frame), 1.0f / 60);
//   ... result.get() ...  // absl::StatusOr<v1::CharacterResult>
//
// Flush rule: the waiting characters are sent as one Frame (sequence: the
// session's next; the batch's dt and time) as soon as the first of these
// holds:
//  1. expected_characters > 0 and that many are waiting (a full tick);
//  2. max_characters are waiting;
//  3. a character already waiting is submitted again, or a submit has
//     another dt or time: the waiting batch goes first, so each
//     character's frames reach the server in the order submitted and a
//     batch has one dt and time (the server solves a character listed
//     twice in one frame twice);
//  4. the oldest waiting submit has waited max_delay;
//  5. Flush(), or the batcher's destruction.
// One frame is in flight at a time, so a submit is sent within max_delay
// plus the frame ahead of it, and answered one round trip later.
#ifndef POSEWIRE_CLIENTS_CPP_FRAME_BATCHER_H_
#define POSEWIRE_CLIENTS_CPP_FRAME_BATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clients/cpp/posewire_client.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::client {

struct FrameBatcherOptions {
  // Characters per tick: a batch is sent as soon as this many are waiting.
  // 0: batches are sent by max_delay, max_characters or Flush(). At most
  // max_characters.
  int expected_characters = 0;
  // Most characters in one frame; at most the server's
  // limits.max_characters_per_batch (GetInfo; 1024 by default).
  int max_characters = 64;
  // Longest a submit waits for its batch to fill before it is sent.
  absl::Duration max_delay = absl::Milliseconds(1);
};

// Why a batch was sent (FrameBatcher::Counters::by_reason's index).
enum class FlushReason {
  kExpectedCharacters = 0,
  kMaxCharacters,
  kRepeatedCharacter,  // a character waiting already was submitted again
  kNewTick,            // a submit with another dt or time
  kMaxDelay,
  kFlush,  // Flush() or the destructor
};
inline constexpr int kNumFlushReasons = 6;

class FrameBatcher {
 public:
  struct Counters {
    int64_t frames = 0;      // frames sent
    int64_t characters = 0;  // characters in them
    int64_t by_reason[kNumFlushReasons] = {};
  };

  // Sends through `session`, which must outlive the batcher and which the
  // caller must not use while the batcher exists (one thread, the
  // batcher's, talks to it). Frames get the session's next sequence
  // numbers (Session::last_sequence() + 1 onwards).
  explicit FrameBatcher(Session& session, FrameBatcherOptions options = {});
  // Sends what is waiting, waits for every answer, stops the thread.
  ~FrameBatcher();
  FrameBatcher(const FrameBatcher&) = delete;
  FrameBatcher& operator=(const FrameBatcher&) = delete;

  // Queues one character's frame for the batch of (dt, time). Thread-safe.
  // The future holds the character's result; an error if its own status
  // is not OK (the others of its frame are unaffected), if the whole frame
  // was refused or the stream broke (every character of that frame), or
  // if the arguments or the options are invalid (INVALID_ARGUMENT naming
  // them; nothing is sent).
  std::future<absl::StatusOr<v1::CharacterResult>> Submit(
      v1::CharacterFrame character, float dt,
      std::optional<double> time = std::nullopt);

  // Sends what is waiting now and waits until every frame sent so far is
  // answered.
  void Flush();

  Counters counters() const;

 private:
  struct Pending {
    v1::CharacterFrame character;
    std::promise<absl::StatusOr<v1::CharacterResult>> promise;
  };
  struct Batch {
    float dt = 0;
    std::optional<double> time;
    std::vector<Pending> pending;
    absl::flat_hash_set<std::string> ids;
    absl::Time oldest;  // when its first submit arrived
  };

  // Moves the waiting batch to the send queue (mutex_ held).
  void SealLocked(FlushReason reason);
  // The sending thread: seals batches by max_delay, sends sealed ones.
  void Run();
  // Sends one batch and completes its promises (no lock held).
  void Send(Batch batch);

  Session& session_;
  const FrameBatcherOptions options_;
  const absl::Status options_status_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the sender: work or shutdown
  std::condition_variable answered_;  // Flush(): the queue is drained
  Batch waiting_;
  std::deque<Batch> sealed_;  // in the order they go out
  bool stopping_ = false;
  // Batches sealed and answered so far: Flush() waits for the first
  // count it saw to be reached by the second.
  uint64_t batches_sealed_ = 0;
  uint64_t batches_answered_ = 0;
  Counters counters_;
  std::thread sender_;
};

}  // namespace posewire::client

#endif  // POSEWIRE_CLIENTS_CPP_FRAME_BATCHER_H_
