#include "server/wire/hitbox_convert.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {
namespace {

absl::StatusOr<HitboxShape> ShapeFromProto(v1::HitboxShape shape,
                                           absl::string_view field) {
  switch (shape) {
    case v1::HITBOX_SHAPE_SPHERE:
      return HitboxShape::kSphere;
    case v1::HITBOX_SHAPE_CAPSULE:
      return HitboxShape::kCapsule;
    case v1::HITBOX_SHAPE_BOX:
      return HitboxShape::kBox;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape: ", static_cast<int>(shape), " is not a HitboxShape"));
  }
}

}  // namespace

absl::StatusOr<std::vector<Hitbox>> HitboxesFromProto(
    const google::protobuf::RepeatedPtrField<v1::Hitbox>& proto,
    const Skeleton& skeleton, absl::string_view field) {
  std::vector<Hitbox> hitboxes;
  hitboxes.reserve(proto.size());
  for (int i = 0; i < proto.size(); ++i) {
    const v1::Hitbox& in = proto[i];
    // Registration is rare: names are built up front.
    const std::string where = absl::StrCat(field, "[", i, "]");
    Hitbox h;
    auto joint =
        JointIndex(skeleton, in.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    h.joint = *joint;
    auto shape = ShapeFromProto(in.shape(), where);
    if (!shape.ok()) return shape.status();
    h.shape = *shape;
    if (in.offset().has_scale()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".offset.scale: must be unset (a hitbox's sizes are its own)",
          " (joint '", in.joint(), "')"));
    }
    auto offset =
        TransformFromProto(in.offset(), absl::StrCat(where, ".offset"));
    if (!offset.ok()) return offset.status();
    h.offset_translation = offset->translation;
    h.offset_rotation = offset->rotation;
    h.radius = in.radius();
    h.half_height = in.half_height();
    h.half_extents = Eigen::Vector3f(
        in.half_extents().x(), in.half_extents().y(), in.half_extents().z());
    hitboxes.push_back(h);
  }
  if (absl::Status s = ValidateHitboxes(skeleton, hitboxes, field); !s.ok()) {
    return s;
  }
  return hitboxes;
}

}  // namespace posewire::server
