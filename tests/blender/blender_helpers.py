"""Shared set-up for the add-on's tests, which run inside headless Blender.

Run by run_blender_test.sh as
  blender -b --factory-startup --python TEST.py -- DATA_DIR [SERVER]
with BLENDER_USER_SCRIPTS holding the add-on and PYTHONPATH /
POSEWIRE_PYTHON_STUBS pointing at the Python client and its stubs.
"""

import builtins
import os
import sys
import unittest

import addon_utils
import bpy
from mathutils import Matrix, Quaternion, Vector


def _script_args():
    argv = sys.argv
    return argv[argv.index("--") + 1:] if "--" in argv else []


ARGS = _script_args()
DATA_DIR = ARGS[0] if ARGS else os.environ.get("POSEWIRE_TEST_DATA_DIR", "")
SERVER = ARGS[1] if len(ARGS) > 1 else ""


def _patch_debian_importers():
    """Debian's Blender 3.4 ships importers older than its Python and
    numpy: the BVH importer opens files with mode 'rU' (gone in Python
    3.11) and the glTF importer uses numpy.bool (gone in numpy 1.24).
    Give them what they expect; the importers themselves are unchanged."""
    import numpy
    if "bool" not in vars(numpy):
        numpy.bool = bool
    import io_anim_bvh.import_bvh as import_bvh
    import_bvh.open = lambda path, mode="r", *a, **k: builtins.open(
        path, mode.replace("U", ""), *a, **k)


def reset_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _patch_debian_importers()


def enable_addon():
    """Enables posewire_blender the way a user does (from the add-ons
    folder in BLENDER_USER_SCRIPTS) and points it at the test server."""
    module = addon_utils.enable("posewire_blender", default_set=True,
                                handle_error=None)
    if module is None:
        raise RuntimeError("posewire_blender did not enable")
    prefs = bpy.context.preferences.addons["posewire_blender"].preferences
    if SERVER:
        prefs.address = SERVER
    return module


def import_cmu_walk():
    bpy.ops.import_anim.bvh(
        filepath=os.path.join(DATA_DIR, "cmu_131_01_walk.bvh"))
    return bpy.context.object


def import_fox():
    bpy.ops.import_scene.gltf(filepath=os.path.join(DATA_DIR, "Fox.glb"))
    return next(o for o in bpy.context.scene.objects
                if o.type == "ARMATURE")


def matrix_of(floats, joint):
    """A packed posewire joint as a 4x4 matrix, written out independently
    of the add-on's own unpacking."""
    f = floats[joint * 10:joint * 10 + 10]
    rotation = Quaternion((f[6], f[3], f[4], f[5])).normalized()
    return (Matrix.Translation(Vector(f[0:3])) @
            rotation.to_matrix().to_4x4() @
            Matrix.Diagonal(Vector((f[7], f[8], f[9], 1.0))))


def max_difference(a, b):
    return max(abs(a[r][c] - b[r][c]) for r in range(4) for c in range(4))


def run(test_case_classes):
    """Runs the TestCases; the exit status tells CTest the outcome."""
    loader = unittest.TestLoader()
    suite = unittest.TestSuite(
        loader.loadTestsFromTestCase(cls) for cls in test_case_classes)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(
        suite)
    sys.stdout.flush()
    if not result.wasSuccessful():
        sys.exit(1)


class WalkTestCase(unittest.TestCase):
    """Each test on a fresh scene with the add-on enabled and the CMU walk
    imported (self.obj); the link is disconnected after it."""

    def setUp(self):
        reset_scene()
        enable_addon()
        from posewire_blender import runtime
        self.runtime = runtime
        self.obj = import_cmu_walk()
        self.scene = bpy.context.scene

    def tearDown(self):
        bpy.ops.posewire.disconnect()

    def pump(self, predicate, what):
        """Runs the add-on's timer until `predicate` holds (20 s at most)."""
        self.assertTrue(self.runtime.pump_until(predicate, 20.0),
                        f"timed out waiting for {what}; link: "
                        f"{self.runtime.status()}, armature error: "
                        f"{self.obj.posewire.last_error}")


def add_ponytail(obj, gravity=(0.0, 0.0, -200.0)):
    """A horizontal three-bone chain (Tail0-Tail2, 2 units each) straight
    back from the head, simulated by a spring set-up with `gravity` and no
    stiffness; the armature's animation is cleared, so only the spring
    moves it."""
    obj.animation_data_clear()
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    parent = bones["Head"]
    head = parent.tail.copy()
    for i in range(3):
        bone = bones.new(f"Tail{i}")
        bone.head = head
        bone.tail = head + Vector((0.0, -2.0, 0.0))
        bone.parent = parent
        bone.use_connect = i > 0
        head, parent = bone.tail.copy(), bone
    bpy.ops.object.mode_set(mode="POSE")
    bpy.ops.object.mode_set(mode="OBJECT")
    spring = obj.posewire.springs.add()
    spring.name, spring.root_bone = "ponytail", "Tail0"
    spring.gravity = gravity
    spring.stiffness = 0.0
