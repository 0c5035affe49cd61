"""Blender bone space <-> posewire joint local transforms, both ways, on
the CMU walk (Blender's BVH importer) and Fox.glb (its glTF importer).

Blender's own evaluation (PoseBone.matrix, armature space) is the reference:
forward kinematics of the posewire pose the add-on reads must reproduce it,
and a posewire pose the add-on writes must make Blender evaluate to that
pose's forward kinematics. With a server, the server's model-space pose of
the skeleton and pose the add-on sends must match Blender's as well.
"""

import math
import os
import sys

# Blender's Python ignores PYTHONDONTWRITEBYTECODE: keep the tree clean.
sys.dont_write_bytecode = True
import unittest

import bpy
from mathutils import Quaternion

sys.path.insert(0, os.path.dirname(__file__))
import blender_helpers as h  # noqa: E402

# Blender stores matrices in single precision; "exact" here means equal to
# 1e-5 relative to the size of the rig (its largest joint distance from
# the armature origin), i.e. a few float32 roundings down the chain.
RELATIVE_TOLERANCE = 1e-5


def fk(floats, parents):
    """Model-space matrices of a packed local pose (the test's own FK)."""
    model = []
    for i, parent in enumerate(parents):
        local = h.matrix_of(floats, i)
        model.append(local if parent < 0 else model[parent] @ local)
    return model


def rig_size(obj):
    return max(max(pb.head.length, pb.tail.length) for pb in obj.pose.bones)


class ConversionCase:
    """The checks, for an armature built by `load` with frames to visit."""

    frames = ()

    def setUp(self):
        h.reset_scene()
        h.enable_addon()
        self.obj = self.load()
        from posewire_blender import conversion
        self.conversion = conversion
        self.layout = conversion.RigLayout(self.obj.data)
        self.tolerance = RELATIVE_TOLERANCE * max(1.0, rig_size(self.obj))

    def test_read_matches_blender_evaluation(self):
        for frame in self.frames:
            bpy.context.scene.frame_set(frame)
            floats = self.layout.pose_floats(self.obj.pose.bones)
            model = fk(floats, self.layout.parents)
            for i, name in enumerate(self.layout.names):
                error = h.max_difference(model[i],
                                         self.obj.pose.bones[name].matrix)
                self.assertLess(error, self.tolerance,
                                f"frame {frame} joint {i} {name}")

    def test_read_then_write_gives_back_the_basis(self):
        for frame in self.frames:
            bpy.context.scene.frame_set(frame)
            floats = self.layout.pose_floats(self.obj.pose.bones)
            for i, name in enumerate(self.layout.names):
                pose_bone = self.obj.pose.bones[name]
                basis = self.layout.basis_matrix(i, h.matrix_of(floats, i))
                if self.layout.connected[i]:
                    basis.translation = pose_bone.matrix_basis.translation
                error = h.max_difference(basis, pose_bone.matrix_basis)
                self.assertLess(error, self.tolerance,
                                f"frame {frame} joint {i} {name}")

    def test_written_pose_evaluates_to_its_forward_kinematics(self):
        """A posewire pose (the animation's, every joint turned a further
        20 degrees about a joint-specific axis) written by the add-on."""
        from posewire_blender import posing
        bpy.context.scene.frame_set(self.frames[-1])
        floats = self.layout.pose_floats(self.obj.pose.bones)
        wanted = list(floats)
        for i in range(len(self.layout.names)):
            o = i * 10
            q = Quaternion((floats[o + 6], floats[o + 3], floats[o + 4],
                            floats[o + 5]))
            axis = (math.sin(i + 1.0), math.cos(2.0 * i), 0.5)
            q = q @ Quaternion(axis, math.radians(20.0))
            wanted[o + 3:o + 7] = [q.x, q.y, q.z, q.w]
        self.obj.animation_data_clear()  # keep the action from overwriting
        posing.apply_pose(self.obj, self.layout, wanted, floats)
        bpy.context.view_layer.update()
        model = fk(wanted, self.layout.parents)
        for i, name in enumerate(self.layout.names):
            error = h.max_difference(model[i], self.obj.pose.bones[name].matrix)
            self.assertLess(error, self.tolerance, f"joint {i} {name}")

    @unittest.skipUnless(h.SERVER, "no server given")
    def test_server_model_pose_matches_blender(self):
        import posewire
        from posewire import pb
        from posewire_blender import rig
        skeleton = rig.skeleton_message(posewire, self.layout)
        with posewire.Client(h.SERVER) as client:
            for frame in self.frames:
                bpy.context.scene.frame_set(frame)
                floats = self.layout.pose_floats(self.obj.pose.bones)
                request = pb.SolveRequest(characters=[pb.CharacterInput(
                    id="c", skeleton=pb.SkeletonRef(skeleton=skeleton),
                    pose=posewire.types.Pose(transforms=floats),
                    want_model_pose=True)])
                out = client.solve(request).characters[0]
                for i, name in enumerate(self.layout.names):
                    error = h.max_difference(
                        h.matrix_of(out.model_pose.transforms, i),
                        self.obj.pose.bones[name].matrix)
                    self.assertLess(error, self.tolerance,
                                    f"frame {frame} joint {i} {name}")


class CmuWalkConversion(ConversionCase, unittest.TestCase):
    frames = (1, 40, 97, 250)

    def load(self):
        return h.import_cmu_walk()


class FoxConversion(ConversionCase, unittest.TestCase):
    frames = (1, 7, 13)

    def load(self):
        obj = h.import_fox()
        walk = bpy.data.actions.get("Walk_root") or next(
            a for a in bpy.data.actions if "Walk" in a.name)
        obj.animation_data.action = walk
        return obj


if __name__ == "__main__":
    h.run([CmuWalkConversion, FoxConversion])
