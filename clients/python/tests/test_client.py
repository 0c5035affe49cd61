"""The Python client against a real posewire server.

POSEWIRE_SERVER names the server (HOST:PORT); tests/e2e/python_client_e2e.sh
starts one and runs this file with /usr/bin/python3. Expected values are
computed here independently: the knee's sampled rotation is the normalised
lerp of its two keys (the server's default interpolation), and the ankle's
model-space position is the rotated bone added to the knee by hand. The
bakes are checked against a Session solving the same frames one by one, and
by forward kinematics written out here.

The CMU walk comes from POSEWIRE_TEST_DATA (else the repository's
tests/data), read by posewire.local; without posewire._core that test skips.
"""

import math
import os
import unittest

import grpc

import posewire
from posewire import local, ops, pb, types

SERVER = os.environ.get("POSEWIRE_SERVER", "127.0.0.1:50051")
DATA = os.environ.get("POSEWIRE_TEST_DATA") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests",
    "data")
WALK = os.path.join(DATA, "cmu_131_01_walk.bvh")

# A leg: hip 1 up, knee 0.5 below it, ankle 0.5 below the knee.
LEG = posewire.make_skeleton(
    ["hip", "knee", "ankle"], [-1, 0, 1],
    rest=[(0, 1, 0), (0, -0.5, 0), (0, -0.5, 0)])
BEND = posewire.axis_angle((1, 0, 0), 90)
# The knee bends from straight to 90 degrees about X over one second.
BEND_CLIP = types.Clip(name="bend", duration=1.0, joints=[
    posewire.rotation_track(1, [0.0, 1.0], [(0, 0, 0, 1), BEND])])


def nlerp(a, b, f):
    q = [(1 - f) * x + f * y for x, y in zip(a, b)]
    n = math.sqrt(sum(c * c for c in q))
    return [c / n for c in q]


def rotate_x(q, v):
    """Rotates v by a rotation about X given as a unit quaternion."""
    angle = 2 * math.atan2(q[0], q[3])
    c, s = math.cos(angle), math.sin(angle)
    return (v[0], c * v[1] - s * v[2], s * v[1] + c * v[2])


def sample(time, clip="bend"):
    return ops.Operation(sample_clip=ops.SampleClipOp(
        sample=ops.ClipSample(clip=clip, time=time)))


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def quat_rotate(q, v):
    x, y, z, _ = quat_mul(quat_mul(q, (*v, 0.0)),
                          (-q[0], -q[1], -q[2], q[3]))
    return (x, y, z)


def chain_positions(pose):
    """Model-space joint positions of a chain (each joint the previous
    one's child) from its local (joints, 10) pose: forward kinematics by
    hand, unit scales."""
    position, rotation, out = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), []
    for joint in pose:
        step = quat_rotate(rotation, [float(c) for c in joint[:3]])
        position = tuple(p + s for p, s in zip(position, step))
        rotation = quat_mul(rotation, [float(c) for c in joint[3:7]])
        out.append(position)
    return out


class MessagesTest(unittest.TestCase):
    """posewire.msg: every message and enum of the three modules."""

    def test_every_message_is_in_one_namespace(self):
        self.assertIs(posewire.msg.Vec3, types.Vec3)
        self.assertIs(posewire.msg.TwoBoneIkOp, ops.TwoBoneIkOp)
        self.assertIs(posewire.msg.SolveRequest, pb.SolveRequest)
        self.assertEqual(posewire.msg.BIPED_EFFECTOR_LEFT_HAND,
                         ops.BIPED_EFFECTOR_LEFT_HAND)
        for module in (types, ops, pb):
            for name, descriptor in module.DESCRIPTOR.message_types_by_name.items():
                self.assertEqual(
                    getattr(posewire.msg, name).DESCRIPTOR.full_name,
                    descriptor.full_name)


class ClientTest(unittest.TestCase):

    def setUp(self):
        self.client = posewire.Client(SERVER, timeout=10)

    def tearDown(self):
        self.client.close()

    def assertQuatClose(self, actual, expected, tolerance=1e-5):
        # q and -q are the same rotation.
        dot = abs(sum(a * e for a, e in zip(actual, expected)))
        self.assertGreater(dot, 1 - tolerance, f"{actual} vs {expected}")

    def test_info_reports_version_limits_and_operations(self):
        info = self.client.info()
        self.assertTrue(info.version)
        self.assertIn("sample_clip", info.operations)
        self.assertIn("blend", info.operations)
        self.assertGreater(info.limits.max_joints_per_skeleton, 0)
        self.assertGreater(info.limits.max_characters_per_batch, 0)

    def test_solve_samples_the_clip_and_returns_the_model_pose(self):
        request = pb.SolveRequest(clips=[BEND_CLIP], characters=[
            pb.CharacterInput(id="leg", skeleton=pb.SkeletonRef(skeleton=LEG),
                              ops=[sample(0.5)], want_model_pose=True)])
        response = self.client.solve(request)
        self.assertEqual(len(response.characters), 1)
        out = response.characters[0]
        self.assertEqual(out.id, "leg")
        self.assertEqual([r.op for r in out.ops], ["sample_clip"])
        local = posewire.unpack_pose(out.pose)
        self.assertEqual(len(local), 3)
        expected_knee = nlerp((0, 0, 0, 1), BEND, 0.5)
        self.assertQuatClose(local[1].rotation, expected_knee)
        self.assertQuatClose(local[0].rotation, (0, 0, 0, 1))
        # Model space: knee straight below the hip, the shin rotated.
        model = posewire.unpack_pose(out.model_pose)
        shin = rotate_x(expected_knee, (0, -0.5, 0))
        expected_ankle = (shin[0], 0.5 + shin[1], shin[2])
        for a, e in zip(model[2].translation, expected_ankle):
            self.assertAlmostEqual(a, e, places=5)
        self.assertEqual(len(posewire.pose_array(out.pose)), 3)

        # The hash the server returned stands in for the skeleton next time.
        request.characters[0].skeleton.hash = out.skeleton_hash
        again = self.client.solve(request).characters[0]
        self.assertEqual(list(again.pose.transforms), list(out.pose.transforms))

    def test_invalid_argument_raises_with_the_servers_message(self):
        bad_blend = ops.Operation(blend=ops.BlendOp(
            layers=[ops.BlendLayer(source=ops.PoseSource(rest=True),
                                   weight=1.0)],
            blend_root="no_such_joint"))
        request = pb.SolveRequest(characters=[pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(skeleton=LEG), ops=[bad_blend])])
        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.solve(request)
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("blend_root", raised.exception.message)
        self.assertIn("no_such_joint", raised.exception.message)
        self.assertIn("INVALID_ARGUMENT", str(raised.exception))

    def test_unknown_skeleton_hash_is_not_found(self):
        request = pb.SolveRequest(characters=[pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(hash="0" * 64))])
        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.solve(request)
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)

    def test_session_twenty_frames_in_order_and_a_bad_character_fails_alone(self):
        with self.client.session() as session:
            session.register_skeleton("leg", LEG)
            session.register_clip("bend", "leg", BEND_CLIP)
            session.register_rig("rig", "leg", [sample(0.0)])
            session.register_character("a", "rig")
            session.register_character("b", "rig")
            for i in range(20):
                t = 0.05 * i
                characters = [
                    pb.CharacterFrame(character_id="a", ops=[sample(t)]),
                    # b just runs its rig: the clip at time 0.
                    "b",
                ]
                if i == 7:
                    # A character naming a clip the session does not have.
                    characters[1] = pb.CharacterFrame(
                        character_id="b", ops=[sample(0.0, clip="missing")])
                result = session.frame(characters, dt=0.05)
                self.assertEqual(result.sequence, i + 1)
                self.assertEqual([c.character_id for c in result.characters],
                                 ["a", "b"])
                a, b = result.characters
                self.assertEqual(a.status.code, 0, a.status.message)
                knee = posewire.unpack_pose(a.pose)[1].rotation
                self.assertQuatClose(knee, nlerp((0, 0, 0, 1), BEND, t))
                if i == 7:
                    self.assertEqual(posewire.client.status_code(b.status.code),
                                     grpc.StatusCode.NOT_FOUND)
                    self.assertIn("missing", b.status.message)
                    with self.assertRaises(posewire.PosewireError):
                        session.raise_for_characters(result)
                else:
                    self.assertEqual(b.status.code, 0, b.status.message)
                    self.assertQuatClose(posewire.unpack_pose(b.pose)[1].rotation,
                                         (0, 0, 0, 1))

    def test_session_resumes_from_its_snapshot_on_a_new_stream(self):
        play = ops.Operation(crossfade=ops.CrossfadeOp(
            commands=[ops.CrossfadeCommand(play="bend")]))
        with self.client.session() as first:
            first.register_skeleton("leg", LEG)
            first.register_clip("bend", "leg", BEND_CLIP)
            first.register_rig("player", "leg", [ops.Operation(
                crossfade=ops.CrossfadeOp())])
            first.register_character("a", "player")
            first.snapshot(every_frames=3)
            first.frame([pb.CharacterFrame(character_id="a", ops=[play])],
                        dt=0.1)
            for _ in range(2):
                first.frame(["a"], dt=0.1)
            # Read by frame() after the third frame's answer.
            point = first.resume_point()
            self.assertEqual(point.snapshot.after_sequence, 3)
            self.assertEqual([r.WhichOneof("message")
                              for r in point.registrations],
                             ["register_skeleton", "register_clip",
                              "register_rig"])
            expected = [first.frame(["a"], dt=0.1) for _ in range(3)]
        with self.client.resume_session(point) as resumed:
            for want in expected:
                got = resumed.frame(["a"], dt=0.1)
                self.assertEqual(got.sequence, want.sequence)
                # The player's clip time went on: the same floats.
                self.assertEqual(list(got.characters[0].pose.transforms),
                                 list(want.characters[0].pose.transforms))
        # A damaged snapshot is refused by name.
        damaged = posewire.ResumePoint(
            pb.SessionSnapshot(data=point.snapshot.data[:-1]),
            point.registrations)
        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.resume_session(damaged)
        self.assertIn("resume.snapshot", raised.exception.message)

    def test_session_errors_raise_and_the_session_goes_on(self):
        with self.client.session() as session:
            with self.assertRaises(posewire.PosewireError) as raised:
                session.register_rig("rig", "no_such_skeleton", [])
            self.assertIn("no_such_skeleton", raised.exception.message)
            session.register_skeleton("leg", LEG)
            session.register_rig("rig", "leg", [])
            session.register_character("a", "rig")
            session.frame(["a"], sequence=5)
            # Sequences must increase: a frame-level error, raised.
            with self.assertRaises(posewire.PosewireError):
                session.frame(["a"], sequence=5)
            result = session.frame(["a"], sequence=6)
            self.assertEqual(result.sequence, 6)

    def test_session_rewinds_and_casts_a_ray_at_the_rewound_pose(self):
        with self.client.session() as session:
            session.register_skeleton("leg", LEG)
            session.register_clip("bend", "leg", BEND_CLIP)
            session.register_rig("rig", "leg", [sample(0.0)])
            session.register_character("a", "rig")
            session.register_hitboxes("body", "leg", [
                pb.Hitbox(joint="ankle", shape=pb.HITBOX_SHAPE_SPHERE,
                          radius=0.1)])
            # Straight at t = 1.0, the knee bent 45 degrees (the clip half
            # way) at t = 1.1.
            session.frame([pb.CharacterFrame(character_id="a",
                                             ops=[sample(0.0)])],
                          dt=0.1, time=1.0)
            session.frame([pb.CharacterFrame(character_id="a",
                                             ops=[sample(0.5)])],
                          dt=0.1, time=1.1)
            # The ankle: (0, 0, 0) straight; bent, the knee (0, 0.5, 0) plus
            # (0, -0.5, 0) turned 45 degrees about X. Rewound half way, by
            # lerp, to the midpoint.
            c = math.cos(math.radians(45))
            bent = (0, 0.5 - 0.5 * c, -0.5 * c)
            want = [0.5 * v for v in bent]
            ray = pb.Ray(origin=types.Vec3(x=0, y=want[1], z=5),
                         direction=types.Vec3(x=0, y=0, z=-1))
            result = session.query([("a", "body")], rays=[ray], time=1.05,
                                   want_poses=True)
            ankle = posewire.unpack_pose(result.poses[0].model_pose)[2]
            for got, expected in zip(ankle.translation, want):
                self.assertAlmostEqual(got, expected, places=5)
            # The ray meets the ankle's sphere (radius 0.1) in front of it.
            hit = result.rays[0]
            self.assertTrue(hit.hit)
            self.assertEqual((hit.character_id, hit.joint, hit.hitbox),
                             ("a", "ankle", 0))
            self.assertAlmostEqual(hit.distance, 5 - want[2] - 0.1, places=5)
            with self.assertRaises(posewire.PosewireError) as raised:
                session.query([("a", "body")], rays=[ray], time=2.0)
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.OUT_OF_RANGE)
            self.assertIn("query.time", raised.exception.message)


class BakeTest(unittest.TestCase):
    """Client.bake against the server and a Session frame by frame."""

    def setUp(self):
        self.client = posewire.Client(SERVER, timeout=10)

    def tearDown(self):
        self.client.close()

    @unittest.skipUnless(local.available() and os.path.isfile(WALK),
                         "needs posewire._core and tests/data")
    def test_walk_bake_equals_a_session_frame_by_frame_bit_for_bit(self):
        """90 frames of the looping walk at 60 fps from 0.25 s, the leg on
        a target that frame_updates move on some frames, spring bones
        carrying state: every pose, model pose and op result equals a
        Session's whose rig samples the clip and runs the same ops."""
        walk = local.load(WALK)
        name = walk.clip_names[0]
        pipeline = [
            posewire.two_bone_ik_op("LeftHip", "LeftKnee", "LeftAnkle",
                                    (5.0, 2.0, -3.0)),
            ops.Operation(spring_bones=ops.SpringBonesOp(
                rig=ops.SpringRig(root_joints=["LeftShoulder"])))]
        frames, rate, start = 90, 60.0, 0.25
        targets = {i: (5.0 + 0.2 * i, 2.0, -3.0 + 0.1 * i)
                   for i in range(0, frames, 3)}
        updates = [[posewire.target_update(0, targets[i])] if i in targets
                   else None for i in range(frames)]
        root = types.Transform(translation=types.Vec3(x=3.0, z=-1.0),
                               rotation=types.Quat(w=1.0),
                               scale=types.Vec3(x=1.0, y=1.0, z=1.0))
        baked = self.client.bake(
            walk, ops=pipeline, frame_rate=rate, frame_count=frames,
            start_time=start, loop=True, frame_updates=updates, root=root,
            want_model_pose=True)
        self.assertEqual(baked.poses.shape, (frames, 31, 10))
        self.assertEqual(baked.model_poses.shape, (frames, 31, 10))
        self.assertIn("spring_bones", baked.state)
        self.assertTrue(baked.skeleton_hash)

        sample = posewire.sample_clip_op(name, 0.0)
        sample.sample_clip.sample.mode = types.PLAYBACK_MODE_LOOP
        with self.client.session() as session:
            session.register_skeleton("walk", walk.skeleton)
            session.register_clip(name, "walk", walk.clips[name])
            session.register_rig("rig", "walk", [sample] + pipeline)
            session.register_character("c", "rig")
            for i in range(frames):
                op_updates = [pb.OpUpdate(op=0, time=start + i / rate)]
                if i in targets:
                    op_updates.append(posewire.target_update(1, targets[i]))
                result = session.frame([pb.CharacterFrame(
                    character_id="c", root=root, want_model_pose=True,
                    op_updates=op_updates)], dt=0.0 if i == 0 else 1 / rate)
                session.raise_for_characters(result)
                want = result.characters[0]
                self.assertEqual(
                    baked.poses[i].tobytes(),
                    posewire.array_from_pose(want.pose).tobytes(),
                    f"frame {i}")
                self.assertEqual(
                    baked.model_poses[i].tobytes(),
                    posewire.array_from_pose(want.model_pose).tobytes(),
                    f"frame {i}")
                self.assertEqual([(r.op, r.reached) for r in baked.ops[i]],
                                 [(r.op, r.reached) for r in want.ops[1:]])
                self.assertAlmostEqual(float(baked.times[i]),
                                       start + i / rate, places=6)
        # The hash the bake returned stands in for the skeleton.
        again = self.client.bake(baked.skeleton_hash, walk.clips[name],
                                 ops=pipeline, frame_rate=rate, frame_count=3,
                                 start_time=start, loop=True,
                                 frame_updates=updates[:3], root=root)
        self.assertEqual(again.poses.tobytes(), baked.poses[:3].tobytes())

    def test_frame_updates_move_the_ik_target_frame_by_frame(self):
        """From the rest pose (no source clip), the ankle lands on each
        frame's updated target; frames with no update (an empty entry, or
        past the last entry) reach the op's own target."""
        own = (0.0, 0.2, 0.3)
        moved = {i: (0.0, 0.4, 0.3 + 0.05 * i) for i in (0, 1, 3)}
        updates = [[posewire.target_update(0, moved[i])] if i in moved
                   else None for i in range(4)]
        baked = self.client.bake(
            LEG, ops=[posewire.two_bone_ik_op("hip", "knee", "ankle", own)],
            frame_count=6, frame_updates=updates)
        self.assertEqual(baked.poses.shape, (6, 3, 10))
        for i in range(6):
            ankle = chain_positions(baked.poses[i])[2]
            want = moved.get(i, own)
            for got, expected in zip(ankle, want):
                self.assertAlmostEqual(got, expected, places=5,
                                       msg=f"frame {i}")
            self.assertTrue(baked.ops[i][0].reached, f"frame {i}")
            self.assertEqual(baked.frame(i).pose.tobytes(),
                             baked.poses[i].tobytes())

    def test_progress_arrives_in_order_with_the_frames(self):
        calls = []
        baked = self.client.bake(
            LEG, BEND_CLIP, frame_count=50,
            frames_per_message=7,
            on_progress=lambda done, total: calls.append((done, total)))
        self.assertEqual(calls, [(min(50, 7 * m), 50) for m in range(1, 9)])
        self.assertEqual(baked.frames_total, 50)
        self.assertEqual(len(baked.poses), 50)
        # 30 fps by default: frame i is the clip at i / 30 s.
        for i in (0, 10, 29):
            self.assertAlmostEqual(float(baked.times[i]), i / 30, places=6)
            self.assertQuatClose(baked.poses[i][1][3:7],
                                 nlerp((0, 0, 0, 1), BEND, i / 30))
        # Past the clip's end (1 s) it holds the last key (no loop).
        self.assertQuatClose(baked.poses[49][1][3:7], BEND)

    def assertQuatClose(self, actual, expected, tolerance=1e-5):
        dot = abs(sum(float(a) * e for a, e in zip(actual, expected)))
        self.assertGreater(dot, 1 - tolerance, f"{actual} vs {expected}")

    def test_progress_returning_false_cancels_the_call(self):
        calls = []

        def stop_at_the_third(done, total):
            calls.append((done, total))
            return len(calls) < 3

        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.bake(LEG, BEND_CLIP, frame_count=100000, loop=True,
                             frames_per_message=10,
                             on_progress=stop_at_the_third)
        error = raised.exception
        self.assertEqual(error.code, grpc.StatusCode.CANCELLED)
        self.assertIn("after 30 of 100000 frames", error.message)
        self.assertEqual(calls, [(10, 100000), (20, 100000), (30, 100000)])
        # The frames that came before are kept, and final.
        self.assertEqual(error.partial.poses.shape, (30, 3, 10))
        self.assertEqual(error.partial.frames_total, 100000)

        # A callback that raises cancels too; its exception comes through.
        def interrupted(done, total):
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.client.bake(LEG, BEND_CLIP, frame_count=100000, loop=True,
                             frames_per_message=10, on_progress=interrupted)
        # The client goes on.
        self.assertEqual(len(self.client.bake(LEG, BEND_CLIP).poses), 31)

    def test_too_many_frames_is_resource_exhausted_with_the_limit(self):
        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.bake(LEG, BEND_CLIP, frame_count=10**9)
        error = raised.exception
        self.assertEqual(error.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("1000000000 frames exceed", error.message)
        self.assertIn("limits.max_bake_frames", error.message)
        self.assertIn("Bake: RESOURCE_EXHAUSTED", str(error))
        self.assertEqual(len(error.partial.poses), 0)
        with self.assertRaises(ValueError) as raised:
            self.client.bake(LEG, "no_such_clip")
        self.assertIn("no_such_clip", str(raised.exception))


# A pelvis 1 up, a hip beside it, and a leg bent a little at the knee so
# the ankle stands 0.1 above the floor (y = 0).
BIPED_LEG = posewire.make_skeleton(
    ["pelvis", "hip", "knee", "ankle"], [-1, 0, 1, 2],
    rest=[(0, 1, 0), (0.1, 0, 0), (0, -0.45, 0.02), (0, -0.45, -0.02)])


class GroundTest(unittest.TestCase):
    """The ground and look_at helpers against the server."""

    def setUp(self):
        self.client = posewire.Client(SERVER, timeout=10)

    def tearDown(self):
        self.client.close()

    def solve(self, op):
        request = pb.SolveRequest(characters=[pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(skeleton=BIPED_LEG), ops=[op],
            want_model_pose=True)])
        return self.client.solve(request).characters[0]

    def test_flat_ground_at_the_floor_leaves_the_pose(self):
        out = self.solve(posewire.ground_op(
            "pelvis", [("hip", "knee", "ankle")],
            samples=[posewire.ground_hit((0.3, 0.0, 0.2))]))
        # Bit for bit: the floats the server returns are the rest pose's.
        self.assertEqual(list(out.pose.transforms),
                         list(BIPED_LEG.rest_pose))

    def test_raised_ground_lifts_the_foot_and_lower_ground_the_pelvis(self):
        ankle_rest_y = 1 - 0.45 - 0.45
        for ground, pelvis_y in ((0.2, 1.0), (-0.2, 0.8)):
            out = self.solve(posewire.ground_op(
                "pelvis", [("hip", "knee", "ankle")],
                samples=[posewire.ground_hit((0, ground, 0))]))
            model = posewire.unpack_pose(out.model_pose)
            self.assertAlmostEqual(model[0].translation[1], pelvis_y, places=4)
            self.assertAlmostEqual(model[3].translation[1],
                                   ankle_rest_y + ground, places=4)
            self.assertAlmostEqual(model[3].translation[0], 0.1, places=4)

    def test_session_ground_samples_come_in_op_updates(self):
        with self.client.session() as session:
            session.register_skeleton("leg", BIPED_LEG)
            session.register_rig("rig", "leg", [
                posewire.ground_op("pelvis", [("hip", "knee", "ankle")])])
            session.register_character("a", "rig")
            frame = pb.CharacterFrame(
                character_id="a", want_model_pose=True,
                op_updates=[posewire.ground_update(
                    0, [posewire.ground_hit((0, 0.1, 0))])])
            result = session.frame([frame], dt=1 / 60)
            session.raise_for_characters(result)
            model = posewire.unpack_pose(result.characters[0].model_pose)
            self.assertAlmostEqual(model[3].translation[1], 0.2, places=4)

    def test_z_up_ground_lifts_the_foot_along_z(self):
        # The leg turned Z-up (the pelvis turned +90 degrees about x, so
        # it stands at z = 1): ground 0.2 up along z lifts the ankle from
        # z = 0.1 to 0.3, as ground 0.2 up along y does the Y-up leg.
        s = math.sqrt(0.5)
        turned = types.Pose(transforms=list(BIPED_LEG.rest_pose))
        turned.transforms[0:7] = [0.0, 0.0, 1.0, s, 0.0, 0.0, s]
        request = pb.SolveRequest(characters=[pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(skeleton=BIPED_LEG),
            pose=turned, want_model_pose=True, ops=[posewire.ground_op(
                "pelvis", [("hip", "knee", "ankle")], up=(0, 0, 1),
                samples=[posewire.ground_hit((0.3, -0.2, 0.2))])])])
        out = self.client.solve(request).characters[0]
        model = posewire.unpack_pose(out.model_pose)
        self.assertAlmostEqual(model[0].translation[2], 1.0, places=4)
        self.assertAlmostEqual(model[3].translation[2], 0.3, places=4)
        self.assertAlmostEqual(model[3].translation[0], 0.1, places=4)

    def test_a_miss_leaves_the_foot_to_the_clip(self):
        out = self.solve(posewire.ground_op(
            "pelvis", [("hip", "knee", "ankle")],
            samples=[posewire.ground_hit(None)]))
        self.assertEqual(list(out.pose.transforms),
                         list(BIPED_LEG.rest_pose))
        self.assertFalse(posewire.ground_hit(None).hit)

    def test_heightfield_is_sampled_by_the_server(self):
        # A flat field 0.2 up under the ankle lifts it as a 0.2 hit does.
        field = posewire.heightfield([[0.2, 0.2], [0.2, 0.2]], spacing=1,
                                     origin=(-0.5, -0.5))
        self.assertEqual((field.columns, field.rows), (2, 2))
        out = self.solve(posewire.ground_op(
            "pelvis", [("hip", "knee", "ankle")], field=field))
        model = posewire.unpack_pose(out.model_pose)
        self.assertAlmostEqual(model[0].translation[1], 1.0, places=4)
        self.assertAlmostEqual(model[3].translation[1], 0.3, places=4)
        with self.assertRaises(ValueError):
            posewire.heightfield([[0.0, 0.0], [0.0]], spacing=1)

    def test_ground_smoothing_state_threads_through_solve(self):
        # Foot smoothing at 6/s over 1/60 s: each call moves the foot a
        # tenth of the way to ground 0.2 up, from the state sent back.
        character = pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(skeleton=BIPED_LEG),
            want_model_pose=True, ops=[posewire.ground_op(
                "pelvis", [("hip", "knee", "ankle")], foot_speed=6,
                samples=[posewire.ground_hit((0, 0.2, 0))])])
        request = pb.SolveRequest(dt=1 / 60, characters=[character])
        first = self.client.solve(request).characters[0]
        offset = first.state["ground"].ground.foot_offsets[0]
        self.assertAlmostEqual(offset, 0.02, places=5)
        request.characters[0].state["ground"].CopyFrom(first.state["ground"])
        second = self.client.solve(request).characters[0]
        self.assertAlmostEqual(second.state["ground"].ground.foot_offsets[0],
                               0.02 + 0.1 * 0.18, places=5)
        model = posewire.unpack_pose(second.model_pose)
        self.assertAlmostEqual(model[3].translation[1], 0.1 + 0.038,
                               places=4)

    def test_look_at_helper_builds_the_op(self):
        op = posewire.look_at_op(["Chest"], "Head", (0, 1, 2), weight=0.5)
        self.assertEqual(list(op.look_at.spine), ["Chest"])
        self.assertEqual(op.look_at.target.z, 2.0)
        self.assertEqual(op.look_at.weight, 0.5)


class PlausibilityTest(unittest.TestCase):
    """The referee's plausibility op through the helpers, in a Session."""

    def setUp(self):
        self.client = posewire.Client(SERVER, timeout=10)

    def tearDown(self):
        self.client.close()

    def test_a_knee_snap_is_reported_and_the_pose_left_as_claimed(self):
        with self.client.session() as session:
            session.register_skeleton("leg", LEG)
            session.register_rig("referee", "leg",
                                 [posewire.plausibility_op()])
            session.register_character("p1", "referee")
            # The knee bends 5 degrees a frame at 60 Hz (300 deg/s), then
            # snaps 120 degrees in one frame (7,200 deg/s).
            angles = [5 * i for i in range(10)] + [165]
            for i, angle in enumerate(angles):
                pose = types.Pose(transforms=list(LEG.rest_pose))
                pose.transforms[13:17] = posewire.axis_angle((1, 0, 0), angle)
                result = session.frame(
                    [pb.CharacterFrame(character_id="p1", pose=pose)],
                    dt=1 / 60)
                session.raise_for_characters(result)
                character = result.characters[0]
                self.assertEqual(list(character.pose.transforms),
                                 list(pose.transforms))
                found = posewire.violations(character.ops[0])
                if i < len(angles) - 1:
                    self.assertEqual(found, [], f"frame {i}")
                    self.assertTrue(character.ops[0].plausibility.plausible)
                    continue
                self.assertFalse(character.ops[0].plausibility.plausible)
                velocity = [v for v in found if v.check == "angular_velocity"]
                self.assertEqual([v.joint for v in velocity], ["knee"])
                self.assertAlmostEqual(velocity[0].measured,
                                       math.radians(120) * 60, places=1)

    def test_learnt_limits_sent_back_catch_a_knee_bent_backwards(self):
        learnt = self.client.learn_limits(LEG, [BEND_CLIP])
        knee = [spec for spec in learnt.limits if spec.joint == "knee"]
        self.assertEqual(len(knee), 1)
        # The clip bends the knee from 0 to 90 degrees about X; the default
        # margin is 5 degrees.
        self.assertAlmostEqual(knee[0].euler.min.x, math.radians(-5), places=4)
        self.assertAlmostEqual(knee[0].euler.max.x, math.radians(95), places=4)
        pose = types.Pose(transforms=list(LEG.rest_pose))
        pose.transforms[13:17] = posewire.axis_angle((1, 0, 0), -30)
        request = pb.SolveRequest(characters=[pb.CharacterInput(
            id="p1", skeleton=pb.SkeletonRef(skeleton=LEG), pose=pose,
            ops=[posewire.plausibility_op(limits=learnt.limits)])])
        out = self.client.solve(request).characters[0]
        found = posewire.violations(out.ops[0])
        self.assertEqual([(v.check, v.joint, v.axis) for v in found],
                         [("range_of_motion", "knee", 0)])
        self.assertAlmostEqual(found[0].measured, math.radians(-30), places=4)
        self.assertAlmostEqual(found[0].bound, math.radians(-5), places=4)
        with self.assertRaises(posewire.PosewireError) as raised:
            self.client.learn_limits(LEG, [])
        self.assertIn("at least one clip", str(raised.exception))

    def test_limits_learnt_in_a_session_are_named_by_rigs(self):
        with self.client.session() as session:
            session.register_skeleton("leg", LEG)
            session.register_clip("bend", "leg", BEND_CLIP)
            learnt = session.learn_limits("leg_limits", "leg", ["bend"])
            # The same limits as the unary call, bit for bit.
            self.assertEqual(
                learnt.SerializeToString(),
                self.client.learn_limits(LEG, [BEND_CLIP]).SerializeToString())
            session.register_rig("referee", "leg", [
                posewire.plausibility_op(limits_id="leg_limits")])
            session.register_character("claimant", "referee")
            pose = types.Pose(transforms=list(LEG.rest_pose))
            pose.transforms[13:17] = posewire.axis_angle((1, 0, 0), -30)
            result = session.frame([pb.CharacterFrame(
                character_id="claimant", pose=pose)])
            found = posewire.violations(result.characters[0].ops[0])
            self.assertEqual([(v.check, v.joint) for v in found],
                             [("range_of_motion", "knee")])
            # Sent back as a set of its own.
            session.register_limits("kept", "leg", learnt.limits)
            with self.assertRaises(posewire.PosewireError) as raised:
                session.learn_limits("run_limits", "leg", ["run"])
            self.assertIn("register_limits.learn_from_clips[0]: no clip "
                          "named 'run'", str(raised.exception))
            with self.assertRaises(posewire.PosewireError) as raised:
                session.register_rig("ghost", "leg", [
                    posewire.plausibility_op(limits_id="ghost")])
            self.assertIn("no limit set 'ghost'", str(raised.exception))

    def test_helper_refuses_unknown_thresholds_and_checks(self):
        with self.assertRaises(ValueError):
            posewire.plausibility_op(thresholds={"max_speed": 1})
        with self.assertRaises(ValueError):
            posewire.plausibility_op(skip=[("knee", {"length"})])
        op = posewire.plausibility_op(
            thresholds={"max_root_speed": 9}, skip=[("knee", {"bone"})],
            skip_extremities=False)
        self.assertEqual(op.plausibility.thresholds.max_root_speed, 9.0)
        self.assertTrue(op.plausibility.skip[0].bone)
        self.assertFalse(op.plausibility.skip[0].range)
        self.assertFalse(op.plausibility.skip_extremities)


if __name__ == "__main__":
    unittest.main(verbosity=2)
