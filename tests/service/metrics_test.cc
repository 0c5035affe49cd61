// Metrics: operation times gathered per request or frame (OperationTimings)
// must end up in the histogram exactly as observing each value would put
// them, and a server's metrics page must count every op of a batch.
#include "server/transport/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "posewire/v1/posewire.pb.h"
#include "tests/service/http_get.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

TEST(OperationTimings, GiveTheBucketsAndSumOfObservingEachValue) {
  auto metrics = Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  // Values on, just above and between bucket bounds, and past the last one.
  const std::vector<double> values = {0.0,  1e-6, 1.5e-6, 2e-6, 2.0001e-6,
                                      3e-5, 1e-3, 0.02,   0.5};
  OperationTimings timings;
  for (double v : values) timings.Add(v1::Operation::kTwoBoneIk, v);
  timings.Add(v1::Operation::kSampleClip, 4e-6);
  timings.Add(-1, 1.0);   // not an operation: ignored
  timings.Add(999, 1.0);  // likewise
  (*metrics)->AddTimings(timings);

  // The same values observed one by one into a histogram of the same name,
  // labels and buckets, in a registry of its own.
  prometheus::Registry reference;
  prometheus::Histogram& histogram =
      prometheus::BuildHistogram()
          .Name("posewire_operation_seconds")
          .Help("reference")
          .Register(reference)
          .Add({{"op", "two_bone_ik"}}, prometheus::Histogram::BucketBoundaries(
                                            kOperationSecondsBuckets.begin(),
                                            kOperationSecondsBuckets.end()));
  for (double v : values) histogram.Observe(v);
  const std::string expected =
      prometheus::TextSerializer().Serialize(reference.Collect());

  const std::string page = HttpGet((*metrics)->port(), "/metrics");
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(expected, '\n')) {
    if (!absl::StartsWith(line, "posewire_operation_seconds_")) continue;
    EXPECT_THAT(page, HasSubstr(std::string(line)));
    ++lines;
  }
  EXPECT_EQ(lines, static_cast<int>(kOperationSecondsBuckets.size()) + 3)
      << "buckets, +Inf, sum and count";
  EXPECT_THAT(page, HasSubstr("posewire_operation_seconds_count{op=\"two_bone_"
                              "ik\"} 9"));
  EXPECT_THAT(page, HasSubstr("posewire_operation_seconds_count{op=\"sample_"
                              "clip\"} 1"));
  EXPECT_THAT(page,
              HasSubstr("posewire_operation_seconds_count{op=\"blend\"} 0"));
}

}  // namespace
}  // namespace posewire::server
