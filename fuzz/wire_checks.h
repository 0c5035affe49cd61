// What the service promises about a successful answer, checked on each
// input the request fuzzers get through: a solved pose is whole (10 floats
// per joint) and finite. "Never return a silently wrong pose" (the design
// guide) starts here. A broken promise aborts, so libFuzzer keeps the input.
#ifndef POSEWIRE_FUZZ_WIRE_CHECKS_H_
#define POSEWIRE_FUZZ_WIRE_CHECKS_H_

#include "absl/strings/string_view.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::fuzz {

// Aborts naming `field` unless `pose` holds a positive multiple of 10
// floats, all finite.
void CheckSolvedPose(const v1::Pose& pose, absl::string_view field);

// Aborts unless `message` serialises (as gRPC would to send it) and parses
// back.
void CheckSerialises(const google::protobuf::Message& message);

}  // namespace posewire::fuzz

#endif  // POSEWIRE_FUZZ_WIRE_CHECKS_H_
