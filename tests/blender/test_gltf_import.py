"""posewire's glTF writer (solver_core/io/gltf_writer.h) as Blender's own
glTF importer reads it, and its BVH writer as the BVH importer does.

run_blender_import_test.sh has io_test's GltfWriter.WritesBlenderFixture
write the CMU walk as walk.glb and walk.bvh (keys at 24 fps) and, in
walk.json, the model-space joint and end-site positions posewire computes
at a few frames. Blender must build one armature with every joint and its
parent, and evaluate the bone heads (joint positions) and the end-site
empties where posewire puts them, within 1e-3 of the leg length.

Both importers turn Y-up into Blender's Z-up: (x, y, z) -> (x, -z, y). glTF
keys at t seconds land on frame t * fps (24, the scene's default: key k on
frame k); the BVH importer starts at frame 1 (key k on frame k + 1).

Run as
  blender -b --factory-startup --python test_gltf_import.py -- WALK_JSON
"""

import json
import os
import sys

# Blender's Python ignores PYTHONDONTWRITEBYTECODE: keep the tree clean.
sys.dont_write_bytecode = True
import unittest

import bpy
from mathutils import Vector

sys.path.insert(0, os.path.dirname(__file__))
import blender_helpers as h  # noqa: E402

RELATIVE_TOLERANCE = 1e-3  # of the leg length

with open(h.ARGS[0]) as f:
    EXPECTED = json.load(f)
FIXTURE_DIR = os.path.dirname(os.path.abspath(h.ARGS[0]))
TOLERANCE = RELATIVE_TOLERANCE * EXPECTED["leg_length"]


def z_up(p):
    """A glTF/BVH (Y-up) point in Blender's Z-up world."""
    return Vector((p[0], -p[2], p[1]))


def armatures():
    return [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]


class ImportCase:
    """The checks, for an armature imported by `load`; key k of the file is
    on Blender frame k + `first_frame`."""

    first_frame = 0

    def setUp(self):
        h.reset_scene()
        self.assertEqual(bpy.context.scene.render.fps, 24)
        self.load()
        found = armatures()
        self.assertEqual(len(found), 1, [o.name for o in found])
        self.obj = found[0]

    def test_armature_has_every_joint_and_its_parent(self):
        bones = self.obj.data.bones
        self.assertEqual(sorted(b.name for b in bones),
                         sorted(EXPECTED["joints"]))
        for name, parent in zip(EXPECTED["joints"], EXPECTED["parents"]):
            bone = bones[name]
            if parent < 0:
                self.assertIsNone(bone.parent, name)
            else:
                self.assertIsNotNone(bone.parent, name)
                self.assertEqual(bone.parent.name,
                                 EXPECTED["joints"][parent], name)

    def test_bone_heads_are_posewire_joint_positions(self):
        scene = bpy.context.scene
        checked = 0
        for entry in EXPECTED["frames"]:
            scene.frame_set(entry["frame"] + self.first_frame)
            world = self.obj.matrix_world
            for name, p in zip(EXPECTED["joints"], entry["positions"]):
                head = world @ self.obj.pose.bones[name].head
                error = (head - z_up(p)).length
                self.assertLessEqual(
                    error, TOLERANCE,
                    f"frame {entry['frame']} joint {name}: Blender {head} "
                    f"vs posewire {z_up(p)}")
                checked += 1
        self.assertEqual(checked, len(EXPECTED["frames"]) *
                         len(EXPECTED["joints"]))


class GlbImport(ImportCase, unittest.TestCase):
    def load(self):
        bpy.ops.import_scene.gltf(
            filepath=os.path.join(FIXTURE_DIR, EXPECTED["glb"]))

    def test_key_frames_span_the_clip(self):
        action = self.obj.animation_data.action
        first, last = action.frame_range
        self.assertAlmostEqual(first, 0.0, places=3)
        self.assertAlmostEqual(last, EXPECTED["frames"][-1]["frame"],
                               places=3)

    def test_end_sites_are_empties_at_the_tips(self):
        """The "<joint>_end" leaf nodes come in as empties parented to
        their bones, at posewire's end-site positions."""
        scene = bpy.context.scene
        for entry in EXPECTED["frames"]:
            scene.frame_set(entry["frame"])
            for name, p in zip(EXPECTED["end_sites"], entry["end_sites"]):
                empty = bpy.data.objects[name]
                self.assertEqual(empty.type, "EMPTY", name)
                self.assertEqual(empty.parent, self.obj, name)
                at = empty.matrix_world.translation
                self.assertLessEqual(
                    (at - z_up(p)).length, TOLERANCE,
                    f"frame {entry['frame']} {name}: Blender {at} vs "
                    f"posewire {z_up(p)}")


class BvhImport(ImportCase, unittest.TestCase):
    first_frame = 1

    def load(self):
        bpy.ops.import_anim.bvh(
            filepath=os.path.join(FIXTURE_DIR, EXPECTED["bvh"]))


if __name__ == "__main__":
    h.run([GlbImport, BvhImport])
