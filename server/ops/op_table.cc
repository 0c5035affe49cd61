#include "server/ops/op_table.h"

#include <algorithm>
#include <utility>

namespace posewire::server {
namespace {

struct Table {
  std::vector<OpSpec> specs;
  // Indexed by op case (the oneof field number); null where none.
  std::vector<const OpSpec*> by_case;
  std::vector<std::string> names_by_case;
  std::vector<std::string> supported;
};

const Table& TheTable() {
  static const Table* const table = [] {
    auto* t = new Table;
    t->specs = {
        SampleClipOpSpec(),      BlendOpSpec(),       AdditiveOpSpec(),
        CrossfadeOpSpec(),       TwoBoneIkOpSpec(),   AimIkOpSpec(),
        CcdIkOpSpec(),           FabrikIkOpSpec(),    FabrikTreeIkOpSpec(),
        FullBodyBipedIkOpSpec(), FullBodyCcdOpSpec(), SpringBonesOpSpec(),
        ValidateOpSpec(),        LookAtOpSpec(),      GroundOpSpec(),
        RetargetOpSpec(),        PlausibilityOpSpec()};
    // Names come from the proto's descriptor, looked up once (a lookup per
    // op of every character was 1% of a batch-loaded server's samples).
    const google::protobuf::OneofDescriptor* oneof =
        v1::Operation::descriptor()->FindOneofByName("op");
    int largest = 0;
    for (int i = 0; i < oneof->field_count(); ++i) {
      largest = std::max(largest, oneof->field(i)->number());
    }
    t->by_case.assign(largest + 1, nullptr);
    t->names_by_case.resize(largest + 1);
    for (int i = 0; i < oneof->field_count(); ++i) {
      t->names_by_case[oneof->field(i)->number()] = oneof->field(i)->name();
    }
    for (const OpSpec& spec : t->specs) {
      t->by_case[spec.op_case] = &spec;
      t->supported.push_back(t->names_by_case[spec.op_case]);
    }
    return t;
  }();
  return *table;
}

}  // namespace

absl::Span<const OpSpec> OpTable() { return TheTable().specs; }

absl::Span<const UpdateField> UpdateFields() {
  static constexpr UpdateField kFields[] = {
      {kUpdateTarget, "target"},
      {kUpdateBendGoal, "bend_goal"},
      {kUpdateTime, "time"},
      {kUpdateWeight, "weight"},
      {kUpdatePoleVector, "pole_vector"},
      {kUpdateEndRotation, "end_rotation"},
      {kUpdateEffectors, "effectors"},
      {kUpdateLayerWeights, "layer_weights"},
      {kUpdateGravity, "gravity"},
      {kUpdateExternalForce, "external_force"},
      {kUpdateWind, "wind"},
      {kUpdateColliders, "colliders"},
      {kUpdateGroundSamples, "ground_samples"},
      {kUpdateClaimed, "claimed"},
  };
  return kFields;
}

uint32_t SetUpdateInputs(const v1::OpUpdate& u) {
  // Runs for every update of every frame: plain presence checks, no table.
  return (u.has_target() ? kUpdateTarget : 0u) |
         (u.has_bend_goal() ? kUpdateBendGoal : 0u) |
         (u.has_time() ? kUpdateTime : 0u) |
         (u.has_weight() ? kUpdateWeight : 0u) |
         (u.has_pole_vector() ? kUpdatePoleVector : 0u) |
         (u.has_end_rotation() ? kUpdateEndRotation : 0u) |
         (u.effectors().empty() ? 0u : kUpdateEffectors) |
         (u.layer_weights().empty() ? 0u : kUpdateLayerWeights) |
         (u.has_gravity() ? kUpdateGravity : 0u) |
         (u.has_external_force() ? kUpdateExternalForce : 0u) |
         (u.has_wind() ? kUpdateWind : 0u) |
         (u.colliders().empty() ? 0u : kUpdateColliders) |
         (u.ground_samples().empty() ? 0u : kUpdateGroundSamples) |
         (u.has_claimed() ? kUpdateClaimed : 0u);
}

const OpSpec* FindOpSpec(v1::Operation::OpCase op_case) {
  const Table& table = TheTable();
  if (op_case <= 0 || static_cast<size_t>(op_case) >= table.by_case.size()) {
    return nullptr;
  }
  return table.by_case[op_case];
}

const std::string& OperationName(v1::Operation::OpCase op_case) {
  static const std::string* const none = new std::string("(none)");
  const Table& table = TheTable();
  if (op_case <= 0 ||
      static_cast<size_t>(op_case) >= table.names_by_case.size()) {
    return *none;
  }
  return table.names_by_case[op_case];
}

const std::vector<std::string>& SupportedOperations() {
  return TheTable().supported;
}

void DescribeOperations(
    const OpLimits& limits,
    google::protobuf::RepeatedPtrField<v1::OperationInfo>* out) {
  for (const OpSpec& spec : OpTable()) {
    v1::OperationInfo* info = out->Add();
    info->set_name(OperationName(spec.op_case));
    for (const UpdateField& field : UpdateFields()) {
      if (spec.updatable & field.input) {
        info->add_updatable(std::string(field.name));
      }
    }
    for (const FieldRange& range : spec.ranges) {
      v1::FieldRange* r = info->add_ranges();
      r->set_field(std::string(range.field));
      r->set_min(range.min);
      r->set_max(
          range.server_limited
              ? std::min<int64_t>(range.max, limits.max_solver_iterations)
              : range.max);
    }
  }
}

}  // namespace posewire::server
