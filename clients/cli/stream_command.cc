#include "clients/cli/stream_command.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cli/cli_common.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/asset_reader.h"

namespace posewire::cli {
namespace {

using Clock = std::chrono::steady_clock;
using google::protobuf::RepeatedPtrField;

constexpr char kSkeletonId[] = "skeleton";
constexpr char kRigId[] = "rig";

int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire stream: " << message << "\n";
  return code;
}

// Set by SIGINT; the frame loop polls it.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

void OnInterrupt(int /*signal*/) {
  interrupted.store(true, std::memory_order_relaxed);
}

// Routes SIGINT to `interrupted` while it lives. SA_RESETHAND restores the
// default action after the first one, so a second Ctrl-C still kills a
// stream whose server stopped answering; SA_RESTART keeps the signal from
// failing a write to standard output half-way (EINTR).
class InterruptScope {
 public:
  InterruptScope() {
    interrupted.store(false, std::memory_order_relaxed);
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction previous_ {};
};

// Sleeps until `deadline` in short steps, so SIGINT is noticed within
// 20 ms even at a slow --rate. False when interrupted.
bool SleepUntil(Clock::time_point deadline) {
  constexpr auto kStep = std::chrono::milliseconds(20);
  while (!interrupted.load(std::memory_order_relaxed)) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_until(
        std::min<Clock::time_point>(deadline, now + kStep));
  }
  return false;
}

// One line of output, flushed: with standard output a file or a pipe, the
// lines appear as the frames are answered, not when a buffer fills.
void PrintLine(const std::string& line) { std::cout << line << std::endl; }

absl::Status FromWire(const v1::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      status.message());
}

// Nearest-rank percentile of sorted values.
int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t index = static_cast<size_t>(std::max(1.0, rank)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

v1::Operation SampleOp(const std::string& clip, float time) {
  v1::Operation op;
  v1::ClipSample* sample = op.mutable_sample_clip()->mutable_sample();
  sample->set_clip(clip);
  sample->set_time(time);
  sample->set_mode(v1::PLAYBACK_MODE_LOOP);
  return op;
}

v1::Operation CrossfadeOp(const std::string& play) {
  v1::Operation op;
  v1::CrossfadeOp* crossfade = op.mutable_crossfade();
  crossfade->set_mode(v1::PLAYBACK_MODE_LOOP);
  if (!play.empty()) crossfade->add_commands()->set_play(play);
  return op;
}

absl::Status CheckOptions(const StreamOptions& o) {
  if (o.frames < 1 || o.frames > kMaxStreamFrames) {
    return absl::InvalidArgumentError(
        absl::StrCat("--frames=", o.frames, ": from 1 to ", kMaxStreamFrames,
                     " (46 hours at 60 Hz); stop a longer stream with Ctrl-C"));
  }
  if (o.characters < 1 || o.characters > kMaxStreamCharacters) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--characters=", o.characters, ": from 1 to ", kMaxStreamCharacters));
  }
  if (!std::isfinite(o.rate) || o.rate < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rate=", o.rate, ": frames per second, >= 0"));
  }
  if (o.print_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--print_every=", o.print_every, ": >= 0"));
  }
  if (o.playback != "sample" && o.playback != "crossfade") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--playback must be sample or crossfade, not '", o.playback, "'"));
  }
  if (o.dt.has_value() && (!std::isfinite(*o.dt) || *o.dt < 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dt=", *o.dt, ": finite and >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

int RunStream(client::Client& client, const StreamOptions& o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) {
    return Fail(std::string(s.message()), 2);
  }
  auto asset = ReadAssetFile(o.file);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  auto clip_index = FindClip(*asset, o.clip);
  if (!clip_index.ok()) return Fail(std::string(clip_index.status().message()));
  auto user_ops = ReadOpsJsonFile(o.ops_json);
  if (!user_ops.ok()) return Fail(std::string(user_ops.status().message()));
  const Clip* clip = *clip_index >= 0 ? &asset->clips[*clip_index] : nullptr;
  const bool crossfade = o.playback == "crossfade";
  if (crossfade && clip == nullptr) {
    return Fail(absl::StrCat(o.file, " has no clip to crossfade"), 2);
  }
  const float dt = o.dt.value_or(o.rate > 0.0 ? static_cast<float>(1.0 / o.rate)
                                              : 1.0f / 60.0f);
  const int num_joints = asset->skeleton.num_joints();

  auto session = client.OpenSession();
  if (!session.ok()) return Fail(DescribeStatus(session.status()));
  auto registered = [](absl::string_view what, const absl::Status& status) {
    if (status.ok()) return true;
    std::cerr << "posewire stream: register " << what << ": "
              << DescribeStatus(status) << "\n";
    return false;
  };
  if (!registered("skeleton",
                  (*session)->RegisterSkeleton(kSkeletonId, asset->skeleton))) {
    return 1;
  }
  for (const Clip& c : asset->clips) {
    if (!registered(absl::StrCat("clip '", c.name, "'"),
                    (*session)->RegisterClip(c.name, kSkeletonId, c))) {
      return 1;
    }
  }
  // The rig's own pipeline; in "sample" mode every frame replaces it with
  // the same ops at that frame's time.
  RepeatedPtrField<v1::Operation> rig_ops;
  if (clip != nullptr) {
    *rig_ops.Add() = crossfade ? CrossfadeOp("") : SampleOp(clip->name, 0.0f);
  }
  for (const v1::Operation& op : *user_ops) *rig_ops.Add() = op;
  if (!registered("rig",
                  (*session)->RegisterRig(kRigId, kSkeletonId, rig_ops))) {
    return 1;
  }
  std::vector<std::string> ids(o.characters);
  for (int k = 0; k < o.characters; ++k) {
    ids[k] = absl::StrCat("c", k);
    if (!registered(absl::StrCat("character '", ids[k], "'"),
                    (*session)->RegisterCharacter(ids[k], kRigId))) {
      return 1;
    }
  }
  PrintLine(absl::StrCat(
      "session: ", o.file, ", ", num_joints, " joints, clip ",
      clip != nullptr ? clip->name : std::string("(none)"), ", ", o.characters,
      " character", o.characters == 1 ? "" : "s", ", ", o.frames, " frames at ",
      o.rate > 0.0 ? absl::StrCat(o.rate, " Hz") : std::string("full speed"),
      ", dt ", dt, " s, playback ", o.playback));

  std::vector<int64_t> latencies_us;
  // What a minute at 60 Hz needs; longer streams grow it as they go.
  latencies_us.reserve(std::min(o.frames, 4096));
  int64_t errors = 0;
  int64_t solved = 0;
  int frames_answered = 0;
  bool broken = false;
  const InterruptScope interrupt_scope;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < o.frames; ++i) {
    if (interrupted.load(std::memory_order_relaxed)) break;
    v1::SessionRequest request;
    v1::Frame* frame = request.mutable_frame();
    frame->set_sequence(static_cast<uint64_t>(i) + 1);
    frame->set_dt(dt);
    for (int k = 0; k < o.characters; ++k) {
      v1::CharacterFrame* character = frame->add_characters();
      character->set_character_id(ids[k]);
      if (clip == nullptr) continue;  // the rig's user ops, on the rest pose
      if (crossfade) {
        if (i > 0) continue;  // the server's player advances by dt
        *character->add_ops() = CrossfadeOp(clip->name);
      } else {
        // Characters spread evenly over the clip, each advancing by dt.
        const float phase = clip->duration * static_cast<float>(k) /
                            static_cast<float>(o.characters);
        *character->add_ops() =
            SampleOp(clip->name, static_cast<float>(i) * dt + phase);
      }
      for (const v1::Operation& op : *user_ops) *character->add_ops() = op;
    }
    if (o.rate > 0.0 &&
        !SleepUntil(start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(i / o.rate)))) {
      break;
    }
    const Clock::time_point sent = Clock::now();
    auto response = (*session)->Call(request);
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                           Clock::now() - sent)
                           .count();
    if (!response.ok()) {
      std::cerr << "posewire stream: frame " << i + 1
                << ": the session ended: " << DescribeStatus(response.status())
                << "\n";
      ++errors;
      broken = true;
      break;
    }
    ++frames_answered;
    latencies_us.push_back(us);
    const v1::FrameResult& result = response->frame();
    if (!response->has_frame() || result.sequence() != frame->sequence()) {
      std::cerr << "posewire stream: frame " << i + 1
                << ": answer out of order (sequence " << result.sequence()
                << ")\n";
      ++errors;
      continue;
    }
    if (absl::Status s = FromWire(result.status()); !s.ok()) {
      std::cerr << "posewire stream: frame " << i + 1 << ": "
                << DescribeStatus(s) << "\n";
      ++errors;
      continue;
    }
    int ok = 0;
    for (const v1::CharacterResult& character : result.characters()) {
      if (absl::Status s = FromWire(character.status()); !s.ok()) {
        std::cerr << "posewire stream: frame " << i + 1 << " character "
                  << character.character_id() << ": " << DescribeStatus(s)
                  << "\n";
        ++errors;
      } else if (character.pose().transforms_size() !=
                 server::kFloatsPerJoint * num_joints) {
        std::cerr << "posewire stream: frame " << i + 1 << " character "
                  << character.character_id() << ": "
                  << character.pose().transforms_size() << " floats for "
                  << num_joints << " joints\n";
        ++errors;
      } else {
        ++ok;
      }
    }
    if (result.characters_size() != o.characters) {
      std::cerr << "posewire stream: frame " << i + 1 << ": "
                << result.characters_size() << " results for " << o.characters
                << " characters\n";
      ++errors;
    }
    solved += ok;
    if (o.print_every > 0 && i % o.print_every == 0) {
      std::string line = absl::StrFormat("frame %d: %d/%d ok, %d us", i + 1, ok,
                                         o.characters, us);
      if (ok > 0 && result.characters(0).pose().transforms_size() >= 3) {
        const auto& t = result.characters(0).pose().transforms();
        absl::StrAppendFormat(&line, ", %s root (%.3f, %.3f, %.3f)",
                              result.characters(0).character_id(), t[0], t[1],
                              t[2]);
      }
      PrintLine(line);
    }
  }
  const bool stopped = interrupted.load(std::memory_order_relaxed);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (!broken) {
    if (absl::Status s = (*session)->Close(); !s.ok()) {
      std::cerr << "posewire stream: closing the session: " << DescribeStatus(s)
                << "\n";
      ++errors;
    }
  }

  std::vector<int64_t> sorted = latencies_us;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0.0;
  for (const int64_t us : sorted) mean += static_cast<double>(us);
  if (!sorted.empty()) mean /= static_cast<double>(sorted.size());
  if (stopped) {
    PrintLine(absl::StrCat("interrupted: SIGINT after ", frames_answered,
                           " of ", o.frames, " frames"));
  }
  std::cout << absl::StrFormat(
      "frames:      %d sent, %d answered\n"
      "characters:  %d per frame, %d solved\n"
      "errors:      %d\n"
      "latency_us:  p50=%d p90=%d p99=%d max=%d mean=%.0f\n"
      "throughput:  %.1f frames/s, %.1f character solves/s\n",
      frames_answered + (broken ? 1 : 0), frames_answered, o.characters, solved,
      errors, Percentile(sorted, 50), Percentile(sorted, 90),
      Percentile(sorted, 99), sorted.empty() ? 0 : sorted.back(), mean,
      seconds > 0 ? frames_answered / seconds : 0.0,
      seconds > 0 ? static_cast<double>(solved) / seconds : 0.0);
  std::cout.flush();
  return errors == 0 ? 0 : 1;
}

}  // namespace posewire::cli
