#include "server/posewire_service.h"

#include "server/version.h"

namespace posewire::server {

PoseWireService::PoseWireService(const ServerConfig& config) {
  info_.set_version(kVersion);
  info_.set_git_revision(kGitRevision);
  info_.set_solver_threads(config.EffectiveThreads());
  posewire::v1::Limits* limits = info_.mutable_limits();
  limits->set_max_message_bytes(config.max_message_bytes);
  limits->set_max_joints_per_skeleton(config.max_joints_per_skeleton);
  limits->set_max_characters_per_batch(config.max_characters_per_batch);
  limits->set_max_solver_iterations(config.max_solver_iterations);
  limits->set_max_sessions(config.max_sessions);
  // No pose operation is served over the wire yet: the list stays empty
  // until Solve/Session land, so clients never see an operation that would
  // answer UNIMPLEMENTED.
}

grpc::ServerUnaryReactor* PoseWireService::GetInfo(
    grpc::CallbackServerContext* context,
    const posewire::v1::GetInfoRequest* /*request*/,
    posewire::v1::GetInfoResponse* response) {
  *response = info_;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace posewire::server
