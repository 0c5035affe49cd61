"""The Python client against a real posewire server.

POSEWIRE_SERVER names the server (HOST:PORT); tests/e2e/python_client_e2e.sh
starts one and runs this file with /usr/bin/python3. Expected values are
computed here independently: the knee's sampled rotation is the normalised
lerp of its two keys (the server's default interpolation), and the ankle's
model-space position is the rotated bone added to the knee by hand.
"""

import math
import os
import unittest

import grpc

import posewire
from posewire import ops, pb, types

SERVER = os.environ.get("POSEWIRE_SERVER", "127.0.0.1:50051")

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
