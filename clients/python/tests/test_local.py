"""posewire.local, the solver core in process, and the numpy calls.

POSEWIRE_TEST_DATA names the repository's tests/data (BVH and glTF files and
the golden recording of Solve answers); POSEWIRE_SERVER a running server to
compare with. POSEWIRE_REQUIRE_CORE=1 (set by the end-to-end scripts, whose
builds make posewire._core) turns a missing core into a failure instead of a
skip.
"""

import os
import struct
import threading
import unittest

import grpc

import posewire
from posewire import local, msg

DATA = os.environ.get("POSEWIRE_TEST_DATA", "")
SERVER = os.environ.get("POSEWIRE_SERVER", "")
WALK = os.path.join(DATA, "cmu_131_01_walk.bvh")
FOX = os.path.join(DATA, "Fox.glb")

if not local.available() and os.environ.get("POSEWIRE_REQUIRE_CORE") == "1":
    raise ImportError("posewire._core is required here and did not import")

needs_core = unittest.skipUnless(local.available(),
                                 "posewire._core is not built")
needs_data = unittest.skipUnless(DATA, "POSEWIRE_TEST_DATA is not set")


def _varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def golden_records(path):
    """(kind, bytes) records of tests/data/golden/*.rec: a varint kind, a
    varint length and that many bytes each."""
    with open(path, "rb") as f:
        data = f.read()
    at, records = 0, []
    while at < len(data):
        kind, at = _varint(data, at)
        size, at = _varint(data, at)
        records.append((kind, data[at:at + size]))
        at += size
    return records


def float_bits(array):
    return struct.pack(f"{array.size}f", *array.reshape(-1).tolist())


@needs_core
@needs_data
class LoadTest(unittest.TestCase):
    def test_reads_bvh_with_its_clip_and_joint_lookup(self):
        walk = local.load(WALK)
        self.assertEqual(len(walk.joint_names), 31)
        self.assertEqual(walk.joint("LeftAnkle"),
                         walk.joint_names.index("LeftAnkle"))
        self.assertEqual(len(walk.clips), 1)
        clip = next(iter(walk.clips.values()))
        self.assertGreater(clip.duration, 1.0)
        self.assertEqual(walk.rest_pose().shape, (31, 10))

    def test_reads_glb_with_every_animation(self):
        fox = local.load(FOX)
        self.assertGreaterEqual(len(fox.clips), 3)
        self.assertIn("Survey", fox.clip_names)

    def test_unknown_joint_names_some_joints(self):
        with self.assertRaises(KeyError) as caught:
            local.load(WALK).joint("LeftFoot")
        self.assertIn("Hips", str(caught.exception))

    def test_bad_files_are_errors_naming_the_file(self):
        with self.assertRaises(posewire.PosewireError) as caught:
            local.load(os.path.join(DATA, "no_such_file.bvh"))
        self.assertIn("no_such_file.bvh", str(caught.exception))
        with self.assertRaises(posewire.PosewireError) as caught:
            local.load(os.path.join(DATA, "NOTICE"))
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn(".bvh", caught.exception.message)


@needs_core
@needs_data
class SolveTest(unittest.TestCase):
    def test_replays_the_services_golden_answers_bit_for_bit(self):
        """Every recorded Solve request (every op, defaults and tuned) gives
        the recorded server's answer, byte for byte."""
        records = golden_records(os.path.join(DATA, "golden", "solve.rec"))
        self.assertGreater(len(records), 40)
        solver = local.Solver()
        for i in range(0, len(records), 2):
            (kind, request), (answer_kind, answer) = records[i:i + 2]
            self.assertEqual((kind, answer_kind), (1, 2))
            response = solver.solve(msg.SolveRequest.FromString(request))
            self.assertEqual(response.SerializeToString(deterministic=True),
                             answer, f"request {i // 2}")

    def test_two_bone_on_a_bvh_file_in_a_few_lines(self):
        walk = local.load(WALK)
        clip = walk.clip_names[0]
        solver = local.Solver()
        later = solver.solve_pose(walk, [posewire.sample_clip_op(clip, 2.0)])
        target = later.position("LeftAnkle")
        answer = solver.solve_pose(walk, [
            posewire.sample_clip_op(clip, 1.0),
            posewire.two_bone_ik_op("LeftHip", "LeftKnee", "LeftAnkle", target)])
        self.assertTrue(answer.ops[1].reached, answer.ops[1])
        reached = answer.position("LeftAnkle")
        self.assertLess(float(((reached - target) ** 2).sum()) ** 0.5, 1e-3)
        # Every joint off the left leg keeps the sampled pose.
        sampled = solver.solve_pose(walk, [posewire.sample_clip_op(clip, 1.0)])
        hips = walk.joint("Hips")
        self.assertEqual(float_bits(answer.pose[hips]),
                         float_bits(sampled.pose[hips]))

    def test_an_input_pose_as_an_array(self):
        walk = local.load(WALK)
        solver = local.Solver()
        sampled = solver.solve_pose(
            walk, [posewire.sample_clip_op(walk.clip_names[0], 0.5)])
        again = solver.solve_pose(walk.skeleton, [], pose=sampled.pose)
        self.assertEqual(float_bits(again.pose), float_bits(sampled.pose))
        self.assertEqual(float_bits(again.model_pose),
                         float_bits(sampled.model_pose))

    def test_bad_requests_raise_and_the_solver_goes_on(self):
        walk = local.load(WALK)
        solver = local.Solver()
        with self.assertRaises(posewire.PosewireError) as caught:
            solver.solve_pose(walk, [posewire.two_bone_ik_op(
                "LeftHip", "LeftKnee", "LeftFoot", (0, 0, 0))])
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("LeftFoot", caught.exception.message)
        with self.assertRaises(ValueError):
            solver.solve_pose(walk, [], pose=[1.0, 2.0, 3.0])
        answer = solver.solve_pose(walk, [])
        self.assertEqual(answer.pose.shape, (31, 10))

    def test_bytes_that_are_no_request_are_refused(self):
        from posewire import _core
        code, message, payload = _core.solve(b"\xff\xff\xff not a message")
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("SolveRequest", message)
        self.assertEqual(payload, b"")
        # An empty request is a valid one with nothing to solve.
        code, message, payload = _core.solve(b"")
        self.assertEqual((code, message), (0, ""))
        self.assertEqual(len(msg.SolveResponse.FromString(payload).characters), 0)

    def test_threads_get_the_same_bits(self):
        walk = local.load(WALK)
        clip = walk.clip_names[0]
        solver = local.Solver()
        ops = [posewire.sample_clip_op(clip, 1.5),
               posewire.two_bone_ik_op("RightHip", "RightKnee", "RightAnkle",
                                    (-5.0, 3.0, 2.0))]
        expected = float_bits(solver.solve_pose(walk, ops).pose)
        results = []

        def work():
            for _ in range(20):
                results.append(float_bits(solver.solve_pose(walk, ops).pose))

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), 80)
        self.assertTrue(all(r == expected for r in results))


@needs_core
@needs_data
@unittest.skipUnless(SERVER, "POSEWIRE_SERVER is not set")
class SameAsTheServerTest(unittest.TestCase):
    def test_the_process_and_the_server_give_the_same_bits(self):
        walk = local.load(WALK)
        clip = walk.clip_names[0]
        ops = [
            posewire.sample_clip_op(clip, 0.75),
            posewire.two_bone_ik_op("LeftHip", "LeftKnee", "LeftAnkle",
                                 (4.0, 2.0, 3.0), pole_vector=(0, 0, 1)),
            posewire.look_at_op(["Chest", "Chest2", "Neck"], "Head",
                                (10.0, 20.0, 30.0),
                                character_forward=(0, 0, 1)),
            msg.Operation(ccd_ik=msg.CcdIkOp(
                chain=["RightShoulder", "RightElbow", "RightWrist"],
                target=msg.Vec3(x=-8.0, y=18.0, z=6.0))),
        ]
        in_process = local.Solver().solve_pose(walk, ops)
        with posewire.Client(SERVER) as client:
            served = client.solve_pose(walk, ops)
        self.assertEqual(float_bits(in_process.pose), float_bits(served.pose))
        self.assertEqual(float_bits(in_process.model_pose),
                         float_bits(served.model_pose))
        self.assertEqual([r.SerializeToString() for r in in_process.ops],
                         [r.SerializeToString() for r in served.ops])

    def test_look_at_turn_state_threads_the_same_in_both(self):
        # A head limited to 90 degrees a second follows a target that jumps
        # to the other side; each call sends back the state the last one
        # returned, in process and on the server alike.
        walk = local.load(WALK)
        clip = walk.clip_names[0]

        def ops(x):
            return [posewire.sample_clip_op(clip, 1.0),
                    posewire.look_at_op(["Chest", "Chest2", "Neck"], "Head",
                                        (x, 20.0, 40.0),
                                        max_turn_speed=1.5707964)]

        solver = local.Solver()
        with posewire.Client(SERVER) as client:
            mine, theirs = {}, {}
            for frame in range(4):
                x = -25.0 if frame == 0 else 25.0
                a = solver.solve_pose(walk, ops(x), state=mine, dt=1 / 60)
                b = client.solve_pose(walk, ops(x), state=theirs, dt=1 / 60)
                self.assertEqual(float_bits(a.pose), float_bits(b.pose))
                self.assertIn("look_at", a.state)
                mine, theirs = a.state, b.state
                limited = any("turn limited" in w for w in a.ops[1].warnings)
                self.assertEqual(limited, frame > 0)

    def test_retarget_onto_another_rig_gives_the_same_bits_in_both(self):
        # The CMU walk onto the Daz rig (chains detected by name), then a
        # two-bone leg after it: in process and on the server alike.
        walk = local.load(WALK)
        daz = local.load(os.path.join(os.path.dirname(WALK),
                                      "cmu_02_03_run_daz.bvh"))
        ops = [posewire.retarget_op(walk, time=1.0)]
        in_process = local.Solver().solve_pose(daz, ops)
        with posewire.Client(SERVER) as client:
            served = client.solve_pose(daz, ops)
        self.assertEqual(float_bits(in_process.pose), float_bits(served.pose))
        self.assertEqual(in_process.ops[0].op, "retarget")
        rest = local.Solver().solve_pose(daz, [])
        self.assertNotEqual(float_bits(in_process.pose), float_bits(rest.pose))
        with self.assertRaises(ValueError):
            posewire.retarget_op(walk, clip="no such clip")
        # With the feet and hands passes: the same bits in both, and the
        # hands moved.
        passes = [posewire.retarget_op(walk, time=1.0, lock_feet=True,
                                       match_hands=True)]
        in_process = local.Solver().solve_pose(daz, passes)
        with posewire.Client(SERVER) as client:
            served = client.solve_pose(daz, passes)
        self.assertEqual(float_bits(in_process.pose), float_bits(served.pose))
        self.assertNotEqual(float_bits(in_process.pose),
                            float_bits(local.Solver().solve_pose(daz, ops).pose))


if __name__ == "__main__":
    unittest.main()
