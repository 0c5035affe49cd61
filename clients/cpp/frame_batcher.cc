#include "clients/cpp/frame_batcher.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace posewire::client {
namespace {

absl::Status CheckOptions(const FrameBatcherOptions& options) {
  if (options.expected_characters < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("FrameBatcherOptions.expected_characters: ",
                     options.expected_characters, " is negative"));
  }
  if (options.max_characters < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FrameBatcherOptions.max_characters: ", options.max_characters,
        " must be at least 1"));
  }
  if (options.expected_characters > options.max_characters) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FrameBatcherOptions.expected_characters: ",
        options.expected_characters, " exceeds max_characters ",
        options.max_characters,
        ", so a full tick could never be seen: raise max_characters (up to "
        "the server's limits.max_characters_per_batch) or leave "
        "expected_characters at 0"));
  }
  if (options.max_delay < absl::ZeroDuration() ||
      options.max_delay == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FrameBatcherOptions.max_delay: ",
                     absl::FormatDuration(options.max_delay),
                     " must be finite and not negative"));
  }
  return absl::OkStatus();
}

std::future<absl::StatusOr<v1::CharacterResult>> Ready(absl::Status status) {
  std::promise<absl::StatusOr<v1::CharacterResult>> promise;
  promise.set_value(std::move(status));
  return promise.get_future();
}

}  // namespace

FrameBatcher::FrameBatcher(Session& session, FrameBatcherOptions options)
    : session_(session),
      options_(options),
      options_status_(CheckOptions(options)) {
  sender_ = std::thread([this] { Run(); });
}

FrameBatcher::~FrameBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (!waiting_.pending.empty()) SealLocked(FlushReason::kFlush);
  }
  wake_.notify_all();
  sender_.join();
}

std::future<absl::StatusOr<v1::CharacterResult>> FrameBatcher::Submit(
    v1::CharacterFrame character, float dt, std::optional<double> time) {
  if (!options_status_.ok()) return Ready(options_status_);
  if (!std::isfinite(dt) || dt < 0) {
    return Ready(absl::InvalidArgumentError(absl::StrCat(
        "FrameBatcher::Submit: dt ", dt, " for character '",
        character.character_id(), "' must be finite and not negative")));
  }
  if (time.has_value() && !std::isfinite(*time)) {
    return Ready(absl::InvalidArgumentError(
        absl::StrCat("FrameBatcher::Submit: time ", *time, " for character '",
                     character.character_id(), "' must be finite")));
  }
  Pending pending{.character = std::move(character), .promise = {}};
  auto future = pending.promise.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      return Ready(absl::FailedPreconditionError(
          "FrameBatcher::Submit: the batcher is being destroyed"));
    }
    if (!waiting_.pending.empty()) {
      // Exact comparison: a batch has one dt and time, bit for bit.
      if (waiting_.dt != dt || waiting_.time != time) {
        SealLocked(FlushReason::kNewTick);
      } else if (waiting_.ids.contains(pending.character.character_id())) {
        SealLocked(FlushReason::kRepeatedCharacter);
      }
    }
    if (waiting_.pending.empty()) {
      waiting_.dt = dt;
      waiting_.time = time;
      waiting_.oldest = absl::Now();
    }
    waiting_.ids.insert(pending.character.character_id());
    waiting_.pending.push_back(std::move(pending));
    const int size = static_cast<int>(waiting_.pending.size());
    if (options_.expected_characters > 0 &&
        size >= options_.expected_characters) {
      SealLocked(FlushReason::kExpectedCharacters);
    } else if (size >= options_.max_characters) {
      SealLocked(FlushReason::kMaxCharacters);
    }
  }
  // Also when nothing was sealed: the sender starts the batch's max_delay.
  wake_.notify_one();
  return future;
}

void FrameBatcher::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!waiting_.pending.empty()) SealLocked(FlushReason::kFlush);
  const uint64_t target = batches_sealed_;
  wake_.notify_one();
  answered_.wait(lock, [&] { return batches_answered_ >= target; });
}

FrameBatcher::Counters FrameBatcher::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void FrameBatcher::SealLocked(FlushReason reason) {
  ++counters_.frames;
  counters_.characters += static_cast<int64_t>(waiting_.pending.size());
  ++counters_.by_reason[static_cast<int>(reason)];
  ++batches_sealed_;
  sealed_.push_back(std::move(waiting_));
  waiting_ = Batch();
}

void FrameBatcher::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!sealed_.empty()) {
      Batch batch = std::move(sealed_.front());
      sealed_.pop_front();
      lock.unlock();
      Send(std::move(batch));
      lock.lock();
      ++batches_answered_;
      answered_.notify_all();
      continue;
    }
    if (!waiting_.pending.empty()) {
      const absl::Time due = waiting_.oldest + options_.max_delay;
      if (stopping_) {
        SealLocked(FlushReason::kFlush);
      } else if (absl::Now() >= due) {
        SealLocked(FlushReason::kMaxDelay);
      } else {
        wake_.wait_for(lock, absl::ToChronoNanoseconds(due - absl::Now()));
      }
      continue;
    }
    if (stopping_) return;
    wake_.wait(lock);
  }
}

void FrameBatcher::Send(Batch batch) {
  v1::Frame frame;
  frame.set_sequence(session_.last_sequence() + 1);
  frame.set_dt(batch.dt);
  if (batch.time.has_value()) frame.set_time(*batch.time);
  frame.mutable_characters()->Reserve(static_cast<int>(batch.pending.size()));
  for (Pending& p : batch.pending) {
    *frame.add_characters() = std::move(p.character);
  }
  absl::StatusOr<v1::FrameResult> result = session_.SendFrame(frame);
  if (result.ok() && result->characters_size() != frame.characters_size()) {
    result = absl::InternalError(absl::StrCat(
        "frame ", frame.sequence(), ": the server answered ",
        result->characters_size(), " characters of ", frame.characters_size()));
  }
  for (size_t i = 0; i < batch.pending.size(); ++i) {
    std::promise<absl::StatusOr<v1::CharacterResult>>& promise =
        batch.pending[i].promise;
    if (!result.ok()) {
      promise.set_value(result.status());
      continue;
    }
    v1::CharacterResult& character =
        *result->mutable_characters(static_cast<int>(i));
    if (absl::Status s = FromWire(character.status()); !s.ok()) {
      promise.set_value(std::move(s));
    } else {
      promise.set_value(std::move(character));
    }
  }
}

}  // namespace posewire::client
