"""Writing solved posewire poses onto pose bones, live or as keys.

A solved local transform becomes a Blender `matrix_basis`
(conversion.RigLayout.basis_matrix), which is then split into the channels
the pose bone animates with: location, and rotation in the bone's own
rotation mode (quaternion, axis-angle or one of the six Euler orders).
Only joints the solve changed are written, so hand-set and animated values
of the other bones are left alone, and scale is never touched (IK and
spring bones only rotate, and translate with a stretching limb or a moving
pelvis).
"""

from mathutils import Vector

from .conversion import FLOATS_PER_JOINT

_EPSILON = 1e-7


def changed_joints(solved, reference):
    """Joint indices whose translation or rotation differs between two
    packed poses: (rotated, translated) index sets."""
    rotated, translated = set(), set()
    for i in range(len(solved) // FLOATS_PER_JOINT):
        o = i * FLOATS_PER_JOINT
        if any(abs(solved[o + k] - reference[o + k]) > _EPSILON
               for k in range(3)):
            translated.add(i)
        if any(abs(solved[o + k] - reference[o + k]) > _EPSILON
               for k in range(3, 7)):
            rotated.add(i)
    return rotated, translated


def rotation_path(pose_bone):
    """The RNA property that holds the bone's rotation in its mode."""
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        return "rotation_quaternion"
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle"
    return "rotation_euler"


def rotation_values(pose_bone, basis, previous=None):
    """The basis rotation in the bone's rotation mode, as a list of floats.
    previous: the Euler values of the neighbouring key, so consecutive
    Euler keys do not flip by 360 degrees."""
    q = basis.to_quaternion()
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        return list(q)
    if mode == "AXIS_ANGLE":
        axis, angle = q.to_axis_angle()
        return [angle, *axis]
    compat = previous if previous is not None else pose_bone.rotation_euler
    return list(q.to_euler(mode, compat))


def apply_pose(armature_object, layout, solved, reference):
    """Writes the joints of `solved` that differ from `reference` (the pose
    that was sent) onto the pose bones."""
    pose_bones = armature_object.pose.bones
    rotated, translated = changed_joints(solved, reference)
    locals_ = layout.local_matrices(solved)
    for i in sorted(rotated | translated):
        pose_bone = pose_bones[layout.names[i]]
        basis = layout.basis_matrix(i, locals_[i])
        if i in rotated:
            setattr(pose_bone, rotation_path(pose_bone),
                    rotation_values(pose_bone, basis))
        if i in translated and not layout.connected[i]:
            pose_bone.location = Vector(basis.translation)
