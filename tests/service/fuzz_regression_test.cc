// Inputs the Solve and Session fuzzers (fuzz/solve_fuzzer.cc,
// fuzz/session_fuzzer.cc) once crashed on, kept in
// fuzz/regressions/<target>/, replayed here through the same functions the
// fuzzers and the service call (server::Solve, server::Session::Handle) in
// the ordinary gcc build: each must now be answered with a status and never
// with a truncated or non-finite pose.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fuzz/session_input.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"

namespace posewire::server {
namespace {

const std::filesystem::path kRegressions =
    std::filesystem::path(POSEWIRE_TEST_DATA_DIR) / ".." / ".." / "fuzz" /
    "regressions";

std::vector<std::filesystem::path> Inputs(const std::string& target) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = kRegressions / target;
  if (!std::filesystem::exists(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A solved pose is whole and finite.
void ExpectSolvedPose(const v1::Pose& pose) {
  EXPECT_GT(pose.transforms_size(), 0);
  EXPECT_EQ(pose.transforms_size() % 10, 0);
  for (float v : pose.transforms()) ASSERT_TRUE(std::isfinite(v));
}

TEST(SolveFuzzRegressions, EveryInputGetsAStatusOrAFinitePose) {
  const std::vector<std::filesystem::path> inputs = Inputs("solve_fuzzer");
  ASSERT_FALSE(inputs.empty()) << "no reproducers under " << kRegressions;
  for (const auto& path : inputs) {
    SCOPED_TRACE(path.filename().string());
    const std::string bytes = ReadBytes(path);
    v1::SolveRequest request;
    if (!request.ParseFromString(bytes)) continue;  // gRPC would refuse it
    const ServerConfig config;
    SkeletonCache skeletons(config.skeleton_cache_size);
    v1::SolveResponse response;
    const absl::Status status = Solve(
        request, config, skeletons, [] { return absl::OkStatus(); }, &response);
    if (!status.ok()) {
      EXPECT_NE(status.code(), absl::StatusCode::kInternal) << status;
      continue;
    }
    ASSERT_EQ(response.characters_size(), request.characters_size());
    for (int c = 0; c < response.characters_size(); ++c) {
      ExpectSolvedPose(response.characters(c).pose());
      if (request.characters(c).want_model_pose()) {
        ExpectSolvedPose(response.characters(c).model_pose());
      }
    }
  }
}

TEST(SessionFuzzRegressions, EveryMessageGetsItsAnswer) {
  const std::vector<std::filesystem::path> inputs = Inputs("session_fuzzer");
  ASSERT_FALSE(inputs.empty()) << "no reproducers under " << kRegressions;
  for (const auto& path : inputs) {
    SCOPED_TRACE(path.filename().string());
    const std::string bytes = ReadBytes(path);
    const ServerConfig config;
    Session session(config);
    fuzz::SessionInputReader reader(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    v1::SessionRequest request;
    while (reader.Next(&request)) {
      v1::SessionResponse response;
      session.Handle(request, &response);
      ASSERT_TRUE(fuzz::AnsweredInKind(request, response))
          << request.message_case();
      if (request.has_frame()) {
        for (const v1::CharacterResult& c : response.frame().characters()) {
          if (c.status().code() != 0) continue;
          ExpectSolvedPose(c.pose());
          if (c.has_model_pose()) ExpectSolvedPose(c.model_pose());
        }
      }
    }
  }
}

}  // namespace
}  // namespace posewire::server
