// A program outside posewire's tree that links the installed C++ client
// (find_package(posewire): posewire::client, or pkg-config
// posewire-client): it sends a running server the left-leg solve that
// posewire_consumer runs in-process, and checks that the server's answer
// is the local job's, bit for bit (the service is deterministic, so a game
// server can re-run and compare what a client claims).
//
//   posewire_client_consumer SERVER CLIP.bvh
//
// Prints the server's version and the result; exits 1 on any error or
// difference.
#include <cstdio>
#include <cstring>

#include "clients/cpp/posewire_client.h"
#include "left_leg.h"
#include "server/wire/wire_convert.h"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "posewire_client_consumer: %s\n",
               status.ToString().c_str());
  return 1;
}

bool SameBits(const posewire::Transform& a, const posewire::Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(),
                     3 * sizeof(float)) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     4 * sizeof(float)) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 3 * sizeof(float)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: posewire_client_consumer SERVER CLIP.bvh\n");
    return 2;
  }
  absl::StatusOr<posewire::ImportedAsset> asset =
      posewire::ReadBvhFile(argv[2]);
  if (!asset.ok()) return Fail(asset.status());
  absl::StatusOr<consumer::LeftLegSolve> local = consumer::SolveLeftLeg(*asset);
  if (!local.ok()) return Fail(local.status());

  std::unique_ptr<posewire::client::Client> client =
      posewire::client::Client::Connect(argv[1]);
  absl::StatusOr<posewire::v1::GetInfoResponse> info = client->GetInfo();
  if (!info.ok()) return Fail(info.status());

  // The same solve as a request: the skeleton, the pose at 0 s and one
  // two-bone op with only its required fields.
  posewire::v1::SolveRequest request;
  posewire::v1::CharacterInput* character = request.add_characters();
  character->set_id("walker");
  posewire::server::SkeletonToProto(
      asset->skeleton, character->mutable_skeleton()->mutable_skeleton());
  posewire::server::PoseToProto(local->input, character->mutable_pose());
  posewire::v1::TwoBoneIkOp* ik = character->add_ops()->mutable_two_bone_ik();
  ik->set_start_joint("LeftHip");
  ik->set_mid_joint("LeftKnee");
  ik->set_end_joint("LeftAnkle");
  posewire::server::Vec3ToProto(local->target, ik->mutable_target());

  absl::StatusOr<posewire::v1::SolveResponse> response = client->Solve(request);
  if (!response.ok()) return Fail(response.status());
  if (response->characters_size() != 1) {
    return Fail(absl::InternalError("the answer has no character"));
  }
  const posewire::v1::CharacterOutput& answer = response->characters(0);
  absl::StatusOr<posewire::LocalPose> solved = posewire::server::PoseFromProto(
      answer.pose(), asset->skeleton, "characters[0].pose");
  if (!solved.ok()) return Fail(solved.status());
  int differing = 0;
  for (size_t i = 0; i < solved->size(); ++i) {
    if (!SameBits((*solved)[i], local->solved[i])) ++differing;
  }
  const bool reached = answer.ops_size() == 1 && answer.ops(0).reached();
  std::printf(
      "server %s: left ankle %.6f from target (reached: %s), %d of %zu "
      "joints differ from the local solve\n",
      info->version().c_str(),
      answer.ops_size() == 1 ? answer.ops(0).error() : -1.0f,
      reached ? "yes" : "no", differing, solved->size());
  return differing == 0 && reached ? 0 : 1;
}
