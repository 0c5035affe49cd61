// posewire._core: the solver core in process, for Python pipelines that
// want no server. It runs the service's own Solve (server/service/solve.h)
// on a serialized posewire.v1.SolveRequest, so every op is available and
// every answer is bit for bit the service's. Messages cross as serialized
// bytes: the Python side parses them with its own protobuf runtime, and the
// two runtimes never share objects. posewire/local.py is the Python face.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/asset_reader.h"

namespace posewire::python {
namespace {

namespace py = pybind11;

// (status code, message, payload): the code is absl's (the same numbers as
// gRPC's), 0 with the payload on success.
using Outcome = std::tuple<int, std::string, py::bytes>;

Outcome Failure(const absl::Status& status) {
  return {static_cast<int>(status.code()), std::string(status.message()),
          py::bytes()};
}

// One configuration and skeleton cache per process, as one server has:
// SkeletonRef.hash works across calls once a skeleton was sent inline.
struct InProcessService {
  server::ServerConfig config;
  server::SkeletonCache skeletons{config.skeleton_cache_size};
};

InProcessService& Service() {
  static InProcessService* service = new InProcessService();
  return *service;
}

Outcome SolveSerialized(const py::bytes& request_bytes) {
  v1::SolveRequest request;
  const std::string serialized = request_bytes;
  if (!request.ParseFromString(serialized)) {
    return Failure(absl::InvalidArgumentError(
        "solve: the request is not a serialized posewire.v1.SolveRequest"));
  }
  v1::SolveResponse response;
  absl::Status status;
  {
    // Solves are pure C++ on the request's own data: other Python threads
    // may run meanwhile (the skeleton cache has its own lock).
    py::gil_scoped_release release;
    InProcessService& service = Service();
    status = server::Solve(
        request, service.config, service.skeletons,
        /*stop=*/[] { return absl::OkStatus(); }, &response);
  }
  if (!status.ok()) return Failure(status);
  return {0, "", py::bytes(response.SerializeAsString())};
}

// (code, message, skeleton bytes, [clip bytes], [warnings]).
std::tuple<int, std::string, py::bytes, std::vector<py::bytes>,
           std::vector<std::string>>
ReadAsset(const std::string& path) {
  absl::StatusOr<ImportedAsset> asset;
  {
    py::gil_scoped_release release;
    asset = ReadAssetFile(path);
  }
  if (!asset.ok()) {
    return {static_cast<int>(asset.status().code()),
            std::string(asset.status().message()),
            py::bytes(),
            {},
            {}};
  }
  v1::Skeleton skeleton;
  server::SkeletonToProto(asset->skeleton, &skeleton);
  std::vector<py::bytes> clips;
  clips.reserve(asset->clips.size());
  for (const Clip& clip : asset->clips) {
    v1::Clip proto;
    server::ClipToProto(clip, &proto);
    clips.emplace_back(proto.SerializeAsString());
  }
  return {0, "", py::bytes(skeleton.SerializeAsString()), std::move(clips),
          asset->warnings};
}

}  // namespace

PYBIND11_MODULE(_core, module) {
  module.doc() =
      "posewire's solver core in process (see posewire.local for the API).";
  module.def("solve", &SolveSerialized, py::arg("request"),
             "Solves a serialized posewire.v1.SolveRequest as the service "
             "does; returns (code, message, serialized SolveResponse).");
  module.def("read_asset", &ReadAsset, py::arg("path"),
             "Reads a .bvh, .gltf or .glb file; returns (code, message, "
             "serialized Skeleton, [serialized Clip], [warnings]).");
}

}  // namespace posewire::python
