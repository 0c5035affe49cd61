#include "fuzz/wire_checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace posewire::fuzz {
namespace {

void Fail(absl::string_view field, const char* what) {
  std::fprintf(stderr, "response invariant broken: %.*s: %s\n",
               static_cast<int>(field.size()), field.data(), what);
  std::abort();
}

}  // namespace

void CheckSolvedPose(const v1::Pose& pose, absl::string_view field) {
  const int n = pose.transforms_size();
  if (n == 0 || n % 10 != 0) Fail(field, "not 10 floats per joint");
  for (float v : pose.transforms()) {
    if (!std::isfinite(v)) Fail(field, "non-finite value in a solved pose");
  }
}

void CheckSerialises(const google::protobuf::Message& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) Fail("response", "serialise");
  std::unique_ptr<google::protobuf::Message> back(message.New());
  if (!back->ParseFromString(bytes)) Fail("response", "parse back");
}

}  // namespace posewire::fuzz
