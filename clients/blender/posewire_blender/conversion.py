"""Blender bone space <-> posewire joint transforms.

posewire wants a skeleton (joints in topological order, each with a local
rest transform relative to its parent) and local poses packed as 10 floats
per joint (tx ty tz, qx qy qz qw, sx sy sz). Blender describes the same rig
differently: each bone has a rest matrix in armature space
(`Bone.matrix_local`: head, tail and roll, Y along the bone) and a pose
offset from that rest (`PoseBone.matrix_basis`).

A posewire joint is the Blender bone frame itself, so no axis swap is ever
needed and the two descriptions map one to one:

    rest_local  = parent.matrix_local^-1 @ bone.matrix_local
    pose_local  = rest_local @ matrix_basis
    matrix_basis = rest_local^-1 @ pose_local

This is what Blender evaluates for bones with the default inheritance
(inherit rotation, full scale inheritance, local location), which the BVH and
glTF importers create; `unsupported_bones` names the others. Connected bones
ignore their basis location in Blender, so the conversion ignores it too.

posewire's model space is the armature object's space; the object's world
matrix is the character's `root` placement. Only mathutils is used, so the
module runs (and is tested) inside Blender without a server.
"""

from mathutils import Matrix, Quaternion, Vector

FLOATS_PER_JOINT = 10


def ordered_bones(armature):
    """The armature's bones with every parent before its children.

    Blender keeps `Armature.bones` in a hierarchy-friendly order already, but
    does not promise it; a stable depth-first walk from the roots does."""
    ordered = []

    def visit(bone):
        ordered.append(bone)
        for child in bone.children:
            visit(child)

    for bone in armature.bones:
        if bone.parent is None:
            visit(bone)
    return ordered


def rest_local_matrix(bone):
    """The bone's rest transform relative to its parent's bone frame."""
    if bone.parent is None:
        return bone.matrix_local.copy()
    return bone.parent.matrix_local.inverted() @ bone.matrix_local


def unsupported_bones(armature):
    """Bones whose Blender evaluation differs from a plain parent-child
    transform chain (so posewire would see a different pose)."""
    return [b.name for b in armature.bones
            if not b.use_inherit_rotation or b.inherit_scale != "FULL"
            or not b.use_local_location]


def pack_matrix(matrix):
    """10 floats (t, q xyzw, s) of a 4x4 affine matrix without shear."""
    translation, rotation, scale = matrix.decompose()
    return [translation.x, translation.y, translation.z,
            rotation.x, rotation.y, rotation.z, rotation.w,
            scale.x, scale.y, scale.z]


def unpack_matrix(floats, offset=0):
    """The 4x4 matrix of 10 packed floats starting at `offset`."""
    f = floats
    o = offset
    translation = Vector((f[o], f[o + 1], f[o + 2]))
    rotation = Quaternion((f[o + 6], f[o + 3], f[o + 4], f[o + 5]))
    scale = Vector((f[o + 7], f[o + 8], f[o + 9]))
    return Matrix.LocRotScale(translation, rotation.normalized(), scale)


class RigLayout:
    """The joint order and rest transforms of one armature, computed once
    when a rig is registered and reused for every frame."""

    def __init__(self, armature):
        bones = ordered_bones(armature)
        self.names = [b.name for b in bones]
        index = {name: i for i, name in enumerate(self.names)}
        self.parents = [index[b.parent.name] if b.parent else -1
                        for b in bones]
        self.rest_local = [rest_local_matrix(b) for b in bones]
        self.rest_local_inverse = [m.inverted() for m in self.rest_local]
        self.connected = [b.use_connect for b in bones]
        self.index = index

    def rest_floats(self):
        """The rest pose packed for posewire.v1.Skeleton.rest_pose."""
        floats = []
        for matrix in self.rest_local:
            floats.extend(pack_matrix(matrix))
        return floats

    def local_matrix(self, i, basis):
        """posewire's local transform of joint i for a Blender basis."""
        if self.connected[i]:
            basis = basis.copy()
            basis.translation = Vector((0.0, 0.0, 0.0))
        return self.rest_local[i] @ basis

    def basis_matrix(self, i, local):
        """The Blender `matrix_basis` that gives posewire local transform
        `local` for joint i."""
        return self.rest_local_inverse[i] @ local

    def pose_floats(self, pose_bones):
        """The armature's current pose (from each PoseBone.matrix_basis)
        packed as a posewire local pose."""
        floats = []
        for i, name in enumerate(self.names):
            floats.extend(pack_matrix(
                self.local_matrix(i, pose_bones[name].matrix_basis)))
        return floats

    def local_matrices(self, floats):
        """One 4x4 local matrix per joint of a packed posewire pose."""
        return [unpack_matrix(floats, i * FLOATS_PER_JOINT)
                for i in range(len(self.names))]

    def model_matrices(self, locals_):
        """Forward kinematics: each joint in the armature's space."""
        model = []
        for i, local in enumerate(locals_):
            parent = self.parents[i]
            model.append(local if parent < 0 else model[parent] @ local)
        return model


def root_floats(armature_object):
    """The armature object's world placement as 10 packed floats."""
    return pack_matrix(armature_object.matrix_world)
