// posewire-load's FrameEncoder: the bytes it writes for a frame and a
// sequence number must parse to exactly that frame with that sequence, for
// the load generator's real workloads and sequence numbers of every varint
// length.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "clients/load/frame_encoder.h"
#include "clients/load/workload.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/service/service_fixture.h"

namespace posewire::load {
namespace {

TEST(FrameEncoder, BytesParseToTheFrameWithThatSequence) {
  for (const char* mix : {"fk_ik", "spring", "blend3", "fullbody"}) {
    SCOPED_TRACE(mix);
    auto workload = BuildWorkload(
        server::Walk(), WorkloadOptions{.op_mix = mix, .characters = 3});
    ASSERT_TRUE(workload.ok()) << workload.status();
    ASSERT_FALSE(workload->frames.empty());
    for (const v1::SessionRequest& frame : workload->frames) {
      const FrameEncoder encoder(frame);
      std::string bytes;
      for (uint64_t sequence :
           {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128},
            uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
        encoder.Encode(sequence, &bytes);
        v1::SessionRequest parsed;
        ASSERT_TRUE(parsed.ParseFromString(bytes)) << sequence;
        v1::SessionRequest expected = frame;
        expected.mutable_frame()->set_sequence(sequence);
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
            parsed, expected))
            << "sequence " << sequence;
      }
    }
  }
}

}  // namespace
}  // namespace posewire::load
