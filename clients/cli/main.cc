// posewire: command-line client of a posewire server, and an asset inspector.
//
//   posewire info    [--server=HOST:PORT]   version, revision, limits, operations
//   posewire health  [--server=HOST:PORT]   grpc.health.v1 check; exit 0 if SERVING
//   posewire inspect FILE                   joints, hierarchy and clips of a
//                                           .bvh, .gltf or .glb file
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "clients/cli/inspect.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "solver_core/io/asset_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "posewire server, HOST:PORT.");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "Deadline of each call.");
ABSL_FLAG(std::string, service, "posewire.v1.PoseWire",
          "Service name `health` asks about (\"\" for the whole server).");

namespace {

constexpr char kUsage[] =
    "posewire COMMAND [flags]\n"
    "  info     [--server=HOST:PORT]  server version, revision, limits and "
    "operations\n"
    "  health   [--server=HOST:PORT]  health check; exit 0 when SERVING\n"
    "  inspect  FILE                  joints, hierarchy and clips of a .bvh, "
    ".gltf or .glb file";

// Exit codes: 0 ok, 1 the operation failed, 2 usage error.
int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire: " << message << "\n";
  return code;
}

std::shared_ptr<grpc::Channel> Connect() {
  return grpc::CreateChannel(absl::GetFlag(FLAGS_server),
                             grpc::InsecureChannelCredentials());
}

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(
      absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(absl::GetFlag(FLAGS_server), ": ", status.error_code(),
                      " ", status.error_message());
}

int Info() {
  auto stub = posewire::v1::PoseWire::NewStub(Connect());
  grpc::ClientContext context;
  SetDeadline(context);
  posewire::v1::GetInfoResponse info;
  grpc::Status status = stub->GetInfo(&context, {}, &info);
  if (!status.ok()) return Fail(Describe(status));
  const posewire::v1::Limits& limits = info.limits();
  std::cout << "server:      " << absl::GetFlag(FLAGS_server) << "\n"
            << "version:     " << info.version() << "\n"
            << "revision:    " << info.git_revision() << "\n"
            << "threads:     " << info.solver_threads() << "\n"
            << "limits:\n"
            << "  max_message_bytes:        " << limits.max_message_bytes()
            << "\n"
            << "  max_joints_per_skeleton:  "
            << limits.max_joints_per_skeleton() << "\n"
            << "  max_characters_per_batch: "
            << limits.max_characters_per_batch() << "\n"
            << "  max_solver_iterations:    " << limits.max_solver_iterations()
            << "\n"
            << "  max_sessions:             " << limits.max_sessions() << "\n"
            << "operations:  "
            << (info.operations().empty()
                    ? std::string("(none)")
                    : absl::StrJoin(info.operations(), ", "))
            << "\n";
  return 0;
}

int Health() {
  auto stub = grpc::health::v1::Health::NewStub(Connect());
  grpc::ClientContext context;
  SetDeadline(context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return Fail(Describe(status));
  const std::string state =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
          response.status());
  std::cout << state << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? 0
             : 1;
}

int Inspect(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("inspect takes exactly one FILE\n" + std::string(kUsage), 2);
  }
  auto asset = posewire::ReadAssetFile(args[2]);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  std::cout << posewire::cli::FormatAsset(*asset);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) return Fail(kUsage, 2);
  const std::string command = args[1];
  if (command == "info" && args.size() == 2) return Info();
  if (command == "health" && args.size() == 2) return Health();
  if (command == "inspect") return Inspect(args);
  return Fail("unknown command or extra arguments: " +
                  absl::StrJoin(args.begin() + 1, args.end(), " ") + "\n" +
                  kUsage,
              2);
}
