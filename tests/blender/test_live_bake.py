"""The add-on against a real server, in headless Blender, on the CMU walk.

Live: hand and foot targets are taken from another frame of the walk; once
the server's answers are applied, Blender's own evaluation (the armature's
world matrix times the pose bones' matrices) must put the wrists and ankles
on the targets. Bake: one Bake call (counted by the link; no Session frame)
whose keyed frames equal what the server answers for each frame's input,
solved alone and in a Session frame by frame, with a target that moves and
a spring chain that carries state; cancelling stops the call; a change a
bake cannot carry is refused by name. Spring bones: a chain added to the
rig must droop under gravity. Server errors must end up as the armature's
error with the server's message, never as a traceback.

Blender runs no timers while a script runs, so the tests call the timer's
function (runtime.pump_until) where Blender would call it.
"""

import os
import sys

# Blender's Python ignores PYTHONDONTWRITEBYTECODE: keep the tree clean.
sys.dont_write_bytecode = True
import unittest

import bpy
from mathutils import Vector

sys.path.insert(0, os.path.dirname(__file__))
import blender_helpers as h  # noqa: E402

FRAME = 40          # the frame solved live
TARGET_FRAME = 100  # where the hands and feet are taken from
LIMBS = [("LeftShoulder", "LeftElbow", "LeftWrist"),
         ("RightShoulder", "RightElbow", "RightWrist"),
         ("LeftHip", "LeftKnee", "LeftAnkle"),
         ("RightHip", "RightKnee", "RightAnkle")]
# Two-bone IK is closed-form: the only error left is float32 rounding in
# the server and in Blender's evaluation (the rig is ~35 units tall).
REACH_TOLERANCE = 1e-3


def world_head(obj, bone):
    return obj.matrix_world @ obj.pose.bones[bone].head


class LiveAndBake(h.WalkTestCase):

    def add_limb_targets(self):
        """Empties where the wrists and ankles are at TARGET_FRAME, carried
        along with the body to FRAME (each relative to its limb's collar or
        hip joint: the walk moves forward and the torso turns), and one
        two-bone set-up per limb."""
        obj = self.obj

        def anchor(start):
            return obj.matrix_world @ obj.pose.bones[start].parent.matrix

        self.scene.frame_set(TARGET_FRAME)
        relative = {end: anchor(start).inverted() @ world_head(obj, end)
                    for start, _, end in LIMBS}
        self.scene.frame_set(FRAME)
        targets = {}
        for start, mid, end in LIMBS:
            empty = bpy.data.objects.new(f"{end} target", None)
            empty.location = anchor(start) @ relative[end]
            self.scene.collection.objects.link(empty)
            setup = obj.posewire.solvers.add()
            setup.name, setup.kind = end, "TWO_BONE"
            setup.start_bone, setup.mid_bone, setup.end_bone = start, mid, end
            setup.target = empty
            targets[end] = empty
            # The test is only meaningful if the target is reachable.
            reach = (obj.pose.bones[mid].head - obj.pose.bones[start].head
                     ).length + (obj.pose.bones[end].head -
                                 obj.pose.bones[mid].head).length
            distance = (empty.location - world_head(obj, start)).length
            self.assertLess(distance, reach, end)
            self.assertGreater(
                (world_head(obj, end) - empty.location).length,
                100 * REACH_TOLERANCE,
                f"{end} is already on its target before solving")
        bpy.context.view_layer.update()
        return targets

    def assert_on_targets(self, targets):
        bpy.context.view_layer.update()
        for end, empty in targets.items():
            error = (world_head(self.obj, end) -
                     empty.matrix_world.translation).length
            self.assertLess(error, REACH_TOLERANCE, end)

    def start_live(self):
        self.assertEqual(bpy.ops.posewire.live(action="START"), {"FINISHED"})
        live = self.runtime.RUNTIME.rigs[self.obj.name]
        self.pump(live.settled, "the first live frame")
        return live

    def test_live_hands_and_feet_land_on_targets(self):
        targets = self.add_limb_targets()
        live = self.start_live()
        self.assert_on_targets(targets)

        # Moving a target re-solves (through the depsgraph handler); a
        # fifth of the way toward the shoulder keeps it within reach.
        target = targets["LeftWrist"]
        target.location = target.location.lerp(
            world_head(self.obj, "LeftShoulder"), 0.2)
        bpy.context.view_layer.update()
        self.assertFalse(live.settled(), "moving a target sent no frame")
        self.pump(live.settled, "the target-move frame")
        self.assert_on_targets(targets)

        # A frame change solves the walk's next pose.
        self.scene.frame_set(FRAME + 1)
        self.assertFalse(live.settled(), "a frame change sent no frame")
        self.pump(live.settled, "the next frame")
        self.assert_on_targets(targets)

    def test_live_look_at_turns_the_head_to_the_target(self):
        """A look-at from the lower back to the head, toward an empty 25
        degrees (about world Z) and a little above where the head looks in
        the walk's pose: Blender's evaluation of the answer points the
        head's look axis (the one its rest turns onto the armature's -Y,
        where the CMU walk faces) at the empty within 1 degree."""
        import math
        from mathutils import Quaternion
        obj = self.obj
        self.scene.frame_set(FRAME)
        axis = (obj.data.bones["Head"].matrix_local.to_3x3().inverted() @
                Vector((0.0, -1.0, 0.0)))

        def look():
            bone = obj.pose.bones["Head"]
            return (obj.matrix_world.to_3x3() @ bone.matrix.to_3x3() @
                    axis).normalized()

        before = look()
        direction = Quaternion((0.0, 0.0, 1.0), math.radians(25)) @ before
        direction.z += 0.2
        empty = bpy.data.objects.new("look target", None)
        empty.location = world_head(obj, "Head") + 40.0 * direction
        self.scene.collection.objects.link(empty)
        setup = obj.posewire.solvers.add()
        setup.name, setup.kind = "look", "LOOK_AT"
        setup.start_bone, setup.end_bone = "lowerback", "Head"
        setup.target = empty
        bpy.context.view_layer.update()

        self.start_live()
        bpy.context.view_layer.update()
        to_target = empty.matrix_world.translation - world_head(obj, "Head")
        self.assertLess(math.degrees(look().angle(to_target)), 1.0)
        self.assertGreater(math.degrees(look().angle(before)), 20.0)
        # The spine took part of the turn (body weight 0.5).
        self.assertGreater(
            (obj.pose.bones["Chest2"].matrix_basis.to_quaternion()
             .rotation_difference(Quaternion()).angle), math.radians(1))

    def test_live_ground_plants_the_feet_on_a_mesh(self):
        """A ground set-up on a flat mesh a unit (5.6 cm) above the clip's
        floor: the live answer, as Blender evaluates it, stands both ankles
        a unit higher and leaves the hips; the mesh a unit below the floor
        lowers the hips and both ankles by a unit instead (the pelvis goes
        down so the lower foot reaches; it is never raised)."""
        obj = self.obj
        self.scene.frame_set(FRAME)
        bpy.context.view_layer.update()
        joints = ("LeftAnkle", "RightAnkle", "Hips")
        before = {j: world_head(obj, j).copy() for j in joints}
        mesh = bpy.data.meshes.new("ground")
        mesh.from_pydata([(-500, -500, 0), (500, -500, 0), (500, 500, 0),
                          (-500, 500, 0)], [], [(0, 1, 2, 3)])
        ground = bpy.data.objects.new("ground", mesh)
        ground.location.z = 1.0
        self.scene.collection.objects.link(ground)
        setup = obj.posewire.solvers.add()
        setup.name, setup.kind = "ground", "GROUND"
        setup.start_bone = "Hips"
        setup.ground_feet = "LeftAnkle, RightAnkle"
        setup.ground_object = ground
        bpy.context.view_layer.update()

        live = self.start_live()
        bpy.context.view_layer.update()
        self.assertEqual(obj.posewire.last_error, "")
        for ankle in ("LeftAnkle", "RightAnkle"):
            rise = world_head(obj, ankle) - before[ankle]
            self.assertAlmostEqual(rise.z, 1.0, delta=1e-3, msg=ankle)
            self.assertLess(rise.xy.length, 1e-3, ankle)
        self.assertLess((world_head(obj, "Hips") - before["Hips"]).length,
                        1e-4)

        # The ground moves below the floor: a re-solve drops the hips.
        ground.location.z = -1.0
        bpy.context.view_layer.update()
        self.pump(live.settled, "the ground-move frame")
        bpy.context.view_layer.update()
        self.assertAlmostEqual(
            (world_head(obj, "Hips") - before["Hips"]).z, -1.0, delta=1e-3)
        for ankle in ("LeftAnkle", "RightAnkle"):
            self.assertAlmostEqual(
                (world_head(obj, ankle) - before[ankle]).z, -1.0,
                delta=1e-3, msg=ankle)

    def test_ground_setup_errors_name_the_setup_and_what_to_fix(self):
        """A ground set-up that cannot be sent is refused before anything
        reaches the server, with the set-up's name and the field to fix;
        live mode does not start on it."""
        from posewire_blender import conversion, rig
        obj = self.obj
        setup = obj.posewire.solvers.add()
        setup.name, setup.kind = "ground", "GROUND"
        setup.start_bone = "Hips"
        layout = conversion.RigLayout(obj.data)
        builder = rig.RigBuilder(self.runtime.posewire_package(), obj, layout)
        pose = layout.pose_floats(obj.pose.bones)

        def error():
            with self.assertRaises(rig.SetupError) as raised:
                builder.operations(pose)
            return str(raised.exception)

        self.assertEqual(error(), "ground: no foot bones (Feet)")
        setup.ground_feet = "LeftAnkle"
        self.assertEqual(error(), "ground: Ground must be a mesh object")
        not_a_mesh = bpy.data.objects.new("not a mesh", None)
        self.scene.collection.objects.link(not_a_mesh)
        setup.ground_object = not_a_mesh
        self.assertEqual(error(), "ground: Ground must be a mesh object")
        mesh = bpy.data.meshes.new("ground")
        mesh.from_pydata([(-500, -500, 0), (500, -500, 0), (500, 500, 0),
                          (-500, 500, 0)], [], [(0, 1, 2, 3)])
        ground = bpy.data.objects.new("ground", mesh)
        self.scene.collection.objects.link(ground)
        setup.ground_object = ground
        setup.ground_feet = "LeftAnkle, Tail"
        self.assertIn("foot 'Tail' is not a bone", error())
        setup.ground_feet = "LHipJoint"
        self.assertIn("foot 'LHipJoint' needs a parent (knee) and a "
                      "grandparent (hip)", error())
        # Live mode refuses to start on it and registers nothing.
        with self.assertRaises(RuntimeError) as raised:
            bpy.ops.posewire.live(action="START")
        self.assertIn("LHipJoint", str(raised.exception))
        self.assertNotIn(obj.name, self.runtime.RUNTIME.rigs)
        # Fixed, the same set-up builds its op.
        setup.ground_feet = "LeftAnkle, RightAnkle"
        ops = builder.operations(pose)
        self.assertEqual(len(ops[0].ground.legs), 2)

    def test_server_error_is_reported_with_its_message(self):
        """A limb whose mid joint is not below its start joint: only the
        server's hierarchy check can refuse it."""
        setup = self.obj.posewire.solvers.add()
        setup.name, setup.kind = "crossed", "TWO_BONE"
        setup.start_bone, setup.mid_bone, setup.end_bone = (
            "LeftHip", "RightKnee", "RightAnkle")
        target = bpy.data.objects.new("target", None)
        self.scene.collection.objects.link(target)
        setup.target = target
        self.assertEqual(bpy.ops.posewire.live(action="START"), {"FINISHED"})
        self.pump(lambda: self.obj.posewire.last_error, "the error")
        error = self.obj.posewire.last_error
        self.assertIn("INVALID_ARGUMENT", error)
        self.assertIn("two_bone_ik", error)
        self.assertIn("RightKnee", error)
        # The session goes on: fixing the set-up solves again.
        setup.start_bone = "RightHip"
        live = self.runtime.RUNTIME.rigs[self.obj.name]
        self.scene.frame_set(FRAME + 1)
        self.pump(live.settled, "a solved frame")
        self.assertEqual(self.obj.posewire.last_error, "")
        self.assertEqual(self.runtime.status()[0], "CONNECTED")

    def test_lost_server_shows_and_retries(self):
        prefs = bpy.context.preferences.addons["posewire_blender"].preferences
        prefs.address = "127.0.0.1:1"  # nothing listens there
        bpy.ops.posewire.connect()
        self.pump(lambda: self.runtime.status()[0] == "LOST", "LOST")
        self.assertIn("127.0.0.1:1", self.runtime.status()[1])
        self.assertIn("UNAVAILABLE", self.runtime.status()[1])
        bpy.ops.posewire.reconnect()
        self.pump(lambda: self.runtime.status()[0] == "LOST", "a retry")

    def test_bake_keys_equal_server_answers(self):
        import posewire
        from posewire import pb
        from posewire_blender import conversion, rig
        self.add_limb_targets()
        obj = self.obj
        layout = conversion.RigLayout(obj.data)
        frames = range(FRAME, FRAME + 30)
        inputs = {}
        for frame in frames:
            self.scene.frame_set(frame)
            inputs[frame] = layout.pose_floats(obj.pose.bones)

        settings = obj.posewire
        settings.bake_start, settings.bake_end = FRAME, FRAME + 29
        settings.bake_mode = "REPLACE"
        self.assertEqual(bpy.ops.posewire.bake(), {"FINISHED"})
        self.assertAlmostEqual(settings.bake_progress, 100.0)
        # One Bake call, no frame through the session.
        self.assertEqual(self.runtime.RUNTIME.link.calls,
                         {"Bake": 1})

        action = obj.animation_data.action
        skeleton = rig.skeleton_message(posewire, layout)
        changed = set()
        with posewire.Client(h.SERVER) as client:
            for frame in frames:
                builder = rig.RigBuilder(posewire, obj, layout)
                request = pb.SolveRequest(characters=[pb.CharacterInput(
                    id="c", skeleton=pb.SkeletonRef(skeleton=skeleton),
                    pose=posewire.types.Pose(transforms=inputs[frame]),
                    ops=builder.operations(inputs[frame]))])
                answer = list(client.solve(request).characters[0]
                              .pose.transforms)
                self.scene.frame_set(frame)
                for i, name in enumerate(layout.names):
                    if answer[i * 10 + 3:i * 10 + 7] == \
                            inputs[frame][i * 10 + 3:i * 10 + 7]:
                        continue
                    changed.add(name)
                    keyed = layout.local_matrix(
                        i, obj.pose.bones[name].matrix_basis)
                    self.assertLess(h.max_difference(
                        keyed, h.matrix_of(answer, i)), 1e-5,
                        f"frame {frame} {name}")
        self.assertEqual(changed, {b for limb in LIMBS for b in limb[:2]})
        for name in changed:
            path = f'pose.bones["{name}"].rotation_euler'
            curve = action.fcurves.find(path, index=0)
            keyed_frames = {int(k.co.x) for k in curve.keyframe_points}
            self.assertTrue(set(frames) <= keyed_frames, name)

    def session_answers(self, request, placements=True):
        """Each frame of a BakeRequest solved by a Session one frame at a
        time: the request's skeleton and ops as the rig, each frame's
        input pose (the source clip's keys at that frame), op updates and
        placement (the request's root without `placements`), dt 0 on the
        first frame and one frame's time after."""
        import posewire
        from posewire import pb
        clip = request.clips[0]
        with posewire.Client(h.SERVER) as client, client.session() as s:
            s.register_skeleton("s", request.skeleton.skeleton)
            s.register_rig("r", "s", request.ops)
            s.register_character("c", "r")
            answers = []
            for i in range(request.frame_count):
                pose = []
                for tracks in clip.joints:
                    for track in (tracks.translation, tracks.rotation,
                                  tracks.scale):
                        width = len(track.values) // len(track.times)
                        key = i if len(track.times) > 1 else 0
                        pose += track.values[key * width:(key + 1) * width]
                entry = (request.frame_updates[i]
                         if i < len(request.frame_updates) else None)
                updates = entry.op_updates if entry is not None else []
                root = request.root
                if placements and entry is not None and entry.HasField(
                        "root"):
                    root = entry.root
                result = s.frame([pb.CharacterFrame(
                    character_id="c", root=root,
                    pose=posewire.types.Pose(transforms=pose),
                    op_updates=updates)],
                    dt=0.0 if i == 0 else 1.0 / request.frame_rate)
                s.raise_for_characters(result)
                answers.append(list(result.characters[0].pose.transforms))
        return answers

    def bake_job(self, start, end):
        from posewire_blender import bake
        self.assertEqual(bpy.ops.posewire.connect(), {"FINISHED"})
        link = self.runtime.RUNTIME.link
        self.pump(lambda: link.state == "CONNECTED", "the connection")
        job = bake.BakeJob(bpy.context, self.obj, start, end, "REPLACE")
        job.run()
        return job

    def assert_keys_equal(self, job, answers):
        """The keyed pose of every frame, as Blender evaluates it, is the
        server's answer within float rounding."""
        from posewire_blender import conversion
        layout = conversion.RigLayout(self.obj.data)
        for frame, answer in zip(job.frames, answers):
            self.scene.frame_set(frame)
            for i, name in enumerate(layout.names):
                keyed = layout.local_matrix(
                    i, self.obj.pose.bones[name].matrix_basis)
                self.assertLess(h.max_difference(
                    keyed, h.matrix_of(answer, i)), 1e-5,
                    f"frame {frame} {name}")

    def test_bake_with_a_moving_target_equals_a_session_frame_by_frame(self):
        """The wrist's target keyed to move over the range: the request
        carries its positions as frame updates, the server's answers equal
        a Session's fed the same frames one by one bit for bit, the keys
        equal them, and Blender's evaluation of the keys puts the wrist on
        the moving target."""
        targets = self.add_limb_targets()
        target = targets["LeftWrist"]
        start = target.location.copy()
        target.keyframe_insert("location", frame=FRAME)
        target.location = start.lerp(
            world_head(self.obj, "LeftShoulder"), 0.3)
        target.keyframe_insert("location", frame=FRAME + 9)
        job = self.bake_job(FRAME, FRAME + 9)
        request = job.request()
        self.assertEqual(self.runtime.RUNTIME.link.calls, {"Bake": 1})
        moved = [u for entry in request.frame_updates
                 for u in entry.op_updates]
        self.assertEqual({u.op for u in moved}, {0})  # LeftWrist's set-up
        self.assertEqual(len(request.frame_updates), 10)
        answers = self.session_answers(request)
        for frame, answer in zip(job.frames, answers):
            self.assertEqual(job.solved[frame], answer, f"frame {frame}")
        self.assert_keys_equal(job, answers)
        for frame in (FRAME + 4, FRAME + 9):
            self.scene.frame_set(frame)
            self.assert_on_targets({"LeftWrist": target})

    def test_bake_carries_spring_state_frame_to_frame(self):
        """A spring chain falling over ten frames: each baked frame equals
        a Session's given the previous frames (state carried, dt one
        frame's time), and the tip has fallen by the end."""
        obj = self.obj
        h.add_ponytail(obj)
        self.scene.frame_set(1)
        bpy.context.view_layer.update()
        tip_rest = obj.matrix_world @ obj.pose.bones["Tail2"].tail
        job = self.bake_job(1, 10)
        answers = self.session_answers(job.request())
        for frame, answer in zip(job.frames, answers):
            self.assertEqual(job.solved[frame], answer, f"frame {frame}")
        self.assertNotEqual(answers[1], answers[9])
        self.assert_keys_equal(job, answers)
        self.scene.frame_set(10)
        bpy.context.view_layer.update()
        tip = obj.matrix_world @ obj.pose.bones["Tail2"].tail
        self.assertLess(tip.z, tip_rest.z - 0.1, "the tip did not fall")

    def test_bake_of_a_moving_armature_with_springs_follows_it(self):
        """Spring chains swing in world space: an armature object that
        moves over the range sends its placement per frame (frame
        updates' root), and each baked frame equals a Session's fed the
        same placements frame by frame, bit for bit."""
        obj = self.obj
        h.add_ponytail(obj)
        obj.keyframe_insert("location", frame=1)
        obj.location.x += 5.0
        obj.keyframe_insert("location", frame=5)
        job = self.bake_job(1, 5)
        request = job.request()
        self.assertEqual(self.runtime.RUNTIME.link.calls, {"Bake": 1})
        moved = [e for e in request.frame_updates if e.HasField("root")]
        self.assertEqual(len(moved), 4)  # frames 2..5 move from frame 1's
        answers = self.session_answers(request)
        for frame, answer in zip(job.frames, answers):
            self.assertEqual(job.solved[frame], answer, f"frame {frame}")
        self.assert_keys_equal(job, answers)
        # The placement mattered: the same frames baked standing still
        # swing the chain otherwise.
        still = self.session_answers(request, placements=False)
        self.assertNotEqual(still[4], answers[4])

    def test_cancelling_a_bake_stops_the_call(self):
        """What Esc does (BakeJob.close -> Link.cancel_bake): a bake of
        100,000 frames sent one per message is cancelled after its first
        message and ends CANCELLED long before its end."""
        from posewire_blender import link as link_module
        self.add_limb_targets()
        job = self.bake_job(FRAME, FRAME + 1)
        request = job.request()
        request.frame_count = 100000
        request.frames_per_message = 1
        request.source.loop = True
        link = self.runtime.RUNTIME.link
        seen = []
        self.runtime.RUNTIME.consumers["cancel test"] = seen.append
        ticket = link.bake("cancel test", request)
        self.pump(lambda: seen, "the first message")
        link.cancel_bake(ticket)
        self.pump(lambda: isinstance(seen[-1], link_module.BakeResult),
                  "the end of the bake")
        end = seen[-1]
        self.assertFalse(end.ok)
        self.assertIn("CANCELLED", end.message)
        progress = [r for r in seen
                    if isinstance(r, link_module.BakeProgress)]
        self.assertEqual([p.done for p in progress],
                         list(range(1, len(progress) + 1)))
        self.assertLess(progress[-1].done, 100000)
        self.runtime.RUNTIME.consumers.pop("cancel test")

    def test_bake_layer_keeps_the_original_action(self):
        targets = self.add_limb_targets()
        obj = self.obj
        original = obj.animation_data.action
        curve = original.fcurves.find('pose.bones["LeftElbow"].rotation_euler',
                                      index=0)
        before = [curve.evaluate(f) for f in range(FRAME, FRAME + 5)]
        settings = obj.posewire
        settings.bake_start, settings.bake_end = FRAME, FRAME + 4
        settings.bake_mode = "LAYER"
        self.assertEqual(bpy.ops.posewire.bake(), {"FINISHED"})
        animation = obj.animation_data
        self.assertIsNot(animation.action, original)
        self.assertIs(animation.nla_tracks[0].strips[0].action, original)
        self.assertEqual([curve.evaluate(f) for f in range(FRAME, FRAME + 5)],
                         before)
        self.scene.frame_set(FRAME)
        self.assert_on_targets(targets)

    def test_live_full_body_biped_with_detected_mapping(self):
        """FBBIK moves the whole body; the server maps the CMU names. With
        10 iterations it lands within ~1e-5 here, so the limbs' tolerance
        holds."""
        targets = self.add_limb_targets()
        self.obj.posewire.solvers.clear()
        setup = self.obj.posewire.solvers.add()
        setup.name, setup.kind = "body", "BIPED"
        setup.biped_iterations = 10
        for end, field in (("LeftWrist", "left_hand_target"),
                           ("RightWrist", "right_hand_target"),
                           ("LeftAnkle", "left_foot_target"),
                           ("RightAnkle", "right_foot_target")):
            setattr(setup, field, targets[end])
        before = {end: (world_head(self.obj, end) -
                        empty.matrix_world.translation).length
                  for end, empty in targets.items()}
        self.start_live()
        self.assertEqual(self.obj.posewire.last_error, "")
        bpy.context.view_layer.update()
        for end, empty in targets.items():
            error = (world_head(self.obj, end) -
                     empty.matrix_world.translation).length
            self.assertLess(error, REACH_TOLERANCE,
                            f"{end}: {before[end]:.3f} away before")

    def test_spring_chain_droops_under_gravity(self):
        obj = self.obj
        h.add_ponytail(obj)
        self.scene.frame_set(1)
        bpy.context.view_layer.update()
        tip_rest = obj.matrix_world @ obj.pose.bones["Tail2"].tail
        root_rest = world_head(obj, "Tail0")
        live = self.start_live()
        for frame in range(2, 32):
            self.scene.frame_set(frame)
            self.pump(live.settled, f"frame {frame}")
        bpy.context.view_layer.update()
        tip = obj.matrix_world @ obj.pose.bones["Tail2"].tail
        self.assertLess(tip.z, tip_rest.z - 1.0, "the tip did not fall")
        # Only rotations change: the chain's root stays, bones keep length.
        self.assertLess((world_head(obj, "Tail0") - root_rest).length, 1e-4)
        for name in ("Tail0", "Tail1", "Tail2"):
            bone = obj.pose.bones[name]
            self.assertAlmostEqual((bone.tail - bone.head).length, 2.0,
                                   delta=1e-4)


class FakeLayout:
    """Stands in for a UI layout in background mode (no windows): every
    layout call works, and every property drawn must exist on its data,
    so a misspelt field in a panel fails here."""

    def __init__(self, test, drawn):
        self.test = test
        self.drawn = drawn

    def __getattr__(self, name):
        def call(*args, **kwargs):
            if name in ("prop", "prop_search", "template_list"):
                data, field = args[2:4] if name == "template_list" else \
                    args[0:2]
                self.test.assertIn(field, data.bl_rna.properties.keys())
                self.drawn.append(field)
            return self
        return call


class Panels(unittest.TestCase):

    def test_panels_draw_every_kind_and_state(self):
        h.reset_scene()
        h.enable_addon()
        from posewire_blender import panels, properties
        obj = h.import_cmu_walk()
        for kind, _, _ in properties.SOLVER_KINDS:
            setup = obj.posewire.solvers.add()
            setup.kind = kind
        obj.posewire.springs.add()
        obj.posewire.bake_progress = 50.0
        context = bpy.context
        drawn = []
        for auto in (True, False):
            for index in range(len(properties.SOLVER_KINDS)):
                obj.posewire.active_solver = index
                obj.posewire.solvers[index].biped_auto_mapping = auto
                for panel in panels.CLASSES:
                    if hasattr(panel, "draw_item"):
                        continue
                    layout = FakeLayout(self, drawn)
                    panel.draw(type("P", (), {"layout": layout})(), context)
        for field in ("left_arm_upper", "iterations", "forward_axis",
                      "mid_bone", "stiffness", "bake_mode", "facing",
                      "body_weight"):
            self.assertIn(field, drawn)


if __name__ == "__main__":
    h.run([LiveAndBake, Panels])
