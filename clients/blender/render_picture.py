"""Renders docs/blender.png: the CMU walk with its hands and feet solved
live by a posewire server onto targets taken from another frame.

  posewire-server --listen=127.0.0.1:50051 &
  PYTHONPATH=clients/python POSEWIRE_PYTHON_STUBS=<build>/clients/python/stubs \\
    BLENDER_USER_SCRIPTS=<dir with addons/posewire_blender> \\
    blender -b --factory-startup --python clients/blender/render_picture.py \\
    -- tests/data 127.0.0.1:50051 docs/blender.png

Cycles on the CPU at a few samples: bones become a skin-modifier mesh
(armatures do not render), targets red spheres.
"""

import math
import os
import sys

# Blender's Python ignores PYTHONDONTWRITEBYTECODE: keep the tree clean.
sys.dont_write_bytecode = True

import bpy
from mathutils import Vector

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "blender"))
import blender_helpers as h  # noqa: E402

FRAME, TARGET_FRAME = 40, 100
LIMBS = [("LeftShoulder", "LeftElbow", "LeftWrist"),
         ("RightShoulder", "RightElbow", "RightWrist"),
         ("LeftHip", "LeftKnee", "LeftAnkle"),
         ("RightHip", "RightKnee", "RightAnkle")]


def material(name, color):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    mat.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value \
        = (*color, 1.0)
    return mat


def solve(obj, scene):
    from posewire_blender import runtime

    def anchor(start):
        return obj.matrix_world @ obj.pose.bones[start].parent.matrix

    scene.frame_set(TARGET_FRAME)
    relative = {end: anchor(start).inverted() @
                (obj.matrix_world @ obj.pose.bones[end].head)
                for start, _, end in LIMBS}
    scene.frame_set(FRAME)
    targets = []
    for start, mid, end in LIMBS:
        empty = bpy.data.objects.new(f"{end} target", None)
        empty.location = anchor(start) @ relative[end]
        scene.collection.objects.link(empty)
        setup = obj.posewire.solvers.add()
        setup.name, setup.kind = end, "TWO_BONE"
        setup.start_bone, setup.mid_bone, setup.end_bone = start, mid, end
        setup.target = empty
        targets.append(empty.location.copy())
    bpy.ops.posewire.live(action="START")
    live = runtime.RUNTIME.rigs[obj.name]
    if not runtime.pump_until(live.settled, 20.0):
        raise RuntimeError(f"no answer: {runtime.status()}")
    bpy.ops.posewire.disconnect()
    bpy.context.view_layer.update()
    return targets


def stick_figure(obj):
    """A skin-modifier mesh through the solved joints."""
    verts, edges, index = [], [], {}
    for pose_bone in obj.pose.bones:
        if pose_bone.bone.length < 0.2:
            continue
        for point in (pose_bone.head, pose_bone.tail):
            key = tuple(round(c, 3) for c in point)
            if key not in index:
                index[key] = len(verts)
                verts.append(obj.matrix_world @ point)
        edges.append((index[tuple(round(c, 3) for c in pose_bone.head)],
                      index[tuple(round(c, 3) for c in pose_bone.tail)]))
    mesh = bpy.data.meshes.new("skeleton")
    mesh.from_pydata(verts, edges, [])
    figure = bpy.data.objects.new("skeleton", mesh)
    bpy.context.scene.collection.objects.link(figure)
    figure.modifiers.new("skin", "SKIN")
    for vertex in mesh.skin_vertices[0].data:
        vertex.radius = (0.45, 0.45)
    figure.modifiers.new("smooth", "SUBSURF").levels = 1
    figure.data.materials.append(material("bone", (0.8, 0.75, 0.65)))
    return figure


def main():
    out = h.ARGS[2] if len(h.ARGS) > 2 else "blender.png"
    h.reset_scene()
    h.enable_addon()
    obj = h.import_cmu_walk()
    scene = bpy.context.scene
    targets = solve(obj, scene)
    figure = stick_figure(obj)
    red = material("target", (0.9, 0.1, 0.05))
    for location in targets:
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.7, location=location)
        bpy.context.object.data.materials.append(red)
    center = sum((v.co for v in figure.data.vertices), Vector()) / len(
        figure.data.vertices)
    floor_z = min(v.co.z for v in figure.data.vertices) - 0.5
    bpy.ops.mesh.primitive_plane_add(size=200, location=(center.x, center.y,
                                                         floor_z))
    bpy.context.object.data.materials.append(
        material("floor", (0.35, 0.4, 0.45)))
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    camera.location = center + Vector((42.0, 34.0, 12.0))
    camera.rotation_euler = (center - camera.location).to_track_quat(
        "-Z", "Y").to_euler()
    scene.collection.objects.link(camera)
    scene.camera = camera
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.rotation_euler = (math.radians(40), 0.0, math.radians(30))
    sun.data.energy = 4.0
    scene.collection.objects.link(sun)
    scene.world = bpy.data.worlds.new("world")
    scene.world.color = (0.6, 0.65, 0.7)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 16
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = 800, 600
    scene.render.image_settings.compression = 100
    scene.render.filepath = os.path.abspath(out)
    bpy.ops.render.render(write_still=True)


main()
