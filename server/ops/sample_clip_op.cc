// sample_clip: the pose is a clip sampled at a time (the frame's update may
// move the time).
#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"

namespace posewire::server {
namespace {

class SampleClip final : public PreparedOp {
 public:
  explicit SampleClip(CompiledSample sample) : sample_(std::move(sample)) {}

  absl::Status Run(OpFrame& frame) const override {
    const float time = frame.update != nullptr && frame.update->has_time()
                           ? frame.update->time()
                           : sample_.time;
    return SampleInto(frame, sample_, time, absl::MakeSpan(frame.pose));
  }

 private:
  CompiledSample sample_;
};

CompiledOp Compile(const OpCompileInput& input) {
  auto sample =
      CompileSample(input.op.sample_clip().sample(), input.field, ".sample");
  if (!sample.ok()) return sample.status();
  return std::make_unique<SampleClip>(*std::move(sample));
}

}  // namespace

OpSpec SampleClipOpSpec() {
  return {.op_case = v1::Operation::kSampleClip,
          .updatable = kUpdateTime,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
