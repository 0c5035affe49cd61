// The bad-input catalogue: malformed Solve requests and Session message
// sequences against a real in-process server, one table row each. Every row
// asserts the documented status code and a message excerpt that names the
// field; after every row the server must still report SERVING on
// grpc.health.v1, and a well-formed Session started before the first row,
// fed frames from its own thread throughout, must keep getting answers that
// are bit-identical to the core run directly.
//
// docs/RELIABILITY.md publishes this table. To regenerate its rows, run
//   POSEWIRE_CATALOGUE_MARKDOWN=1 bad_input_catalogue_test
// and paste the lines it prints between the markers.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {
namespace bad_input_catalogue_test {

std::vector<BadInput> Catalogue(std::shared_ptr<grpc::Channel> channel) {
  std::vector<BadInput> rows;
  for (std::vector<BadInput> area :
       {RequestRows(), PoseOpRows(), IkRows(), SpringAndValidateRows(),
        SessionRows(), SnapshotRows(), RefereeRows(), BakeRows(),
        TransportRows(std::move(channel))}) {
    for (BadInput& row : area) rows.push_back(std::move(row));
  }
  return rows;
}

// ------------------------------------------- the concurrent good stream --

// A Session opened before the catalogue runs, fed well-formed frames from
// its own thread until stopped: the walk under a crossfade player fading
// between two clips, each answer compared bit for bit with the core's
// StepCrossfade and forward kinematics.
class GoodStream {
 public:
  explicit GoodStream(v1::PoseWire::Stub& stub) {
    context_.set_deadline(Deadline(3600));
    stream_ = stub.Session(&context_);
  }

  // After a failed assertion the test returns early: cancel the stream so
  // the thread's blocking Read returns, and join it.
  ~GoodStream() {
    if (thread_.joinable()) {
      stop_ = true;
      context_.TryCancel();
      thread_.join();
    }
  }

  // Registers the walk rig; returns an error message or "".
  std::string Register() {
    std::vector<v1::SessionRequest> setup(5);
    setup[0] = SessionSetup()[0];
    for (int i = 0; i < 2; ++i) {
      setup[1 + i] = SessionSetup()[1];
      setup[1 + i].mutable_register_clip()->set_id(i == 0 ? "walk" : "walk2");
    }
    v1::RegisterRig* rig = setup[3].mutable_register_rig();
    rig->set_id("player");
    rig->set_skeleton_id("cmu");
    rig->add_ops()->mutable_crossfade();
    setup[4].mutable_register_character()->set_id("witness");
    setup[4].mutable_register_character()->set_rig_id("player");
    for (const v1::SessionRequest& r : setup) {
      v1::SessionResponse response;
      if (!stream_->Write(r) || !stream_->Read(&response)) {
        return "the good stream broke while registering";
      }
      if (Outcome o = FromResponse(response); o.code != StatusCode::OK) {
        return o.message;
      }
    }
    return "";
  }

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }

  // Waits until two more frames have been answered and checked since the
  // call (so at least one was sent after whatever happened before it).
  // Returns "" or what went wrong.
  std::string WaitForTwoMoreFrames() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t target = verified_ + 2;
    // Liveness, not timing: a generous bound so a hang fails the test
    // instead of blocking it forever.
    cv_.wait_for(lock, std::chrono::seconds(120),
                 [&] { return verified_ >= target || !error_.empty(); });
    if (!error_.empty()) return error_;
    if (verified_ < target) return "the good stream stopped answering";
    return "";
  }

  // Stops the thread and closes the stream; returns "" or what went wrong.
  std::string Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    stream_->WritesDone();
    grpc::Status status = stream_->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty() && !status.ok()) error_ = status.error_message();
    return error_;
  }

  int64_t verified() {
    std::lock_guard<std::mutex> lock(mu_);
    return verified_;
  }

 private:
  void Fail(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty()) error_ = std::move(message);
    cv_.notify_all();
  }

  void Loop() {
    const Skeleton& skeleton = Walk().skeleton;
    const std::vector<Clip> clips = {Walk().clips[0], Walk().clips[0]};
    CrossfadeState expected_state;
    for (uint64_t f = 0; !stop_; ++f) {
      v1::SessionRequest request = FrameFor(f + 1, "witness");
      v1::CharacterFrame& c = FrameCharacter(request);
      c.set_want_model_pose(true);
      // Frame 0 starts the walk; then a fade to the other clip every 40
      // frames, alternating.
      if (f == 0) {
        c.add_ops()->mutable_crossfade()->add_commands()->set_play("walk");
        expected_state = Play(0);
      } else if (f % 40 == 0) {
        const int clip = static_cast<int>(f / 40 % 2);
        v1::FadeTo* fade =
            c.add_ops()->mutable_crossfade()->add_commands()->mutable_fade_to();
        fade->set_clip(clip == 0 ? "walk" : "walk2");
        fade->set_fade_seconds(0.25f);
        auto next = FadeTo(expected_state,
                           FadeRequest{.clip = clip, .duration = 0.25f});
        if (!next.ok()) return Fail(std::string(next.status().message()));
        expected_state = *next;
      }
      LocalPose expected(skeleton.num_joints());
      auto next = StepCrossfade(skeleton, clips, expected_state, kDt,
                                absl::MakeSpan(expected));
      if (!next.ok()) return Fail(std::string(next.status().message()));
      expected_state = *next;

      v1::SessionResponse response;
      if (!stream_->Write(request) || !stream_->Read(&response)) {
        return Fail(absl::StrCat("frame ", f, ": the good stream broke"));
      }
      if (Outcome o = FromResponse(response); o.code != StatusCode::OK) {
        return Fail(absl::StrCat("frame ", f, ": ", o.message));
      }
      const v1::CharacterResult& out = response.frame().characters(0);
      if (response.frame().sequence() != f + 1 ||
          !BitIdentical(out.pose(), Packed(expected)) ||
          !BitIdentical(out.model_pose(), Packed(Model(expected)))) {
        return Fail(absl::StrCat("frame ", f, ": not the core's answer"));
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++verified_;
      cv_.notify_all();
    }
  }

  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t verified_ = 0;
  std::string error_;
};

class BadInputCatalogueTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_message_bytes = kMaxMessageBytes;
    config.max_characters_per_batch = kMaxCharacters;
    config.max_solver_iterations = kMaxIterations;
    config.max_session_objects = kMaxSessionObjects;
    config.max_bake_bytes = kMaxBakeBytes;
  }

  // Both names the server answers health checks for.
  std::string HealthProblem() {
    auto health = grpc::health::v1::Health::NewStub(channel_);
    for (const char* service : {"", "posewire.v1.PoseWire"}) {
      grpc::ClientContext context;
      context.set_deadline(Deadline());
      grpc::health::v1::HealthCheckRequest request;
      request.set_service(service);
      grpc::health::v1::HealthCheckResponse response;
      grpc::Status status = health->Check(&context, request, &response);
      if (!status.ok()) return status.error_message();
      if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
        return absl::StrCat("'", service, "' is not SERVING");
      }
    }
    return "";
  }
};

// A markdown table cell: no pipes, no newlines, not too long.
std::string Cell(absl::string_view text, size_t max = 110) {
  std::string cell =
      absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}, {"`", "'"}});
  if (cell.size() > max) cell = cell.substr(0, max - 3) + "...";
  return cell;
}

TEST(BadInputCatalogue, HasAtLeastFortyDistinctRows) {
  const std::vector<BadInput> rows = Catalogue(nullptr);
  EXPECT_GE(rows.size(), 40u);
  absl::flat_hash_set<std::string> names;
  for (const BadInput& row : rows) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_FALSE(row.input.empty()) << row.name;
  }
}

TEST_F(BadInputCatalogueTest,
       EveryRow_GetsItsCodeAndMessageWhileTheServerAndAGoodStreamCarryOn) {
  GoodStream good(*stub_);
  ASSERT_EQ(good.Register(), "");
  good.Start();
  ASSERT_EQ(good.WaitForTwoMoreFrames(), "");

  const bool markdown = std::getenv("POSEWIRE_CATALOGUE_MARKDOWN") != nullptr;
  std::string table;
  for (const BadInput& row : Catalogue(channel_)) {
    SCOPED_TRACE(row.name);
    const Outcome outcome = row.run(*stub_);
    EXPECT_EQ(outcome.code, row.code)
        << grpc::StatusCode(outcome.code) << ": " << outcome.message;
    EXPECT_THAT(outcome.message, HasSubstr(row.message));
    if (row.code != StatusCode::OK && !row.message.empty()) {
      // Not a bare code: a person can act on it.
      EXPECT_FALSE(outcome.message.empty());
    }
    ASSERT_EQ(HealthProblem(), "");
    ASSERT_EQ(good.WaitForTwoMoreFrames(), "");
    if (markdown) {
      const std::string code =
          outcome.code == StatusCode::OK
              ? "OK"
              : absl::StatusCodeToString(
                    static_cast<absl::StatusCode>(outcome.code));
      absl::StrAppend(&table, "| `", row.name, "` | ", Cell(row.input), " | ",
                      code, " | ", Cell(outcome.message), " |\n");
    }
  }
  EXPECT_EQ(good.Stop(), "");
  EXPECT_GT(good.verified(), 0);
  if (markdown) std::cout << table;
}

}  // namespace bad_input_catalogue_test
}  // namespace posewire::server::bad_input
