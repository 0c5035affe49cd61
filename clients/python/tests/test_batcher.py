"""posewire.FrameBatcher against a real posewire server.

POSEWIRE_SERVER names the server (HOST:PORT); tests/e2e/python_client_e2e.sh
starts one and runs this file with /usr/bin/python3. POSEWIRE_SERVER_BINARY,
when set, lets a test start servers of its own (one allowing two characters
per frame, one killed under the batcher).

The expected answers come from a second session on the same server that
sends each submitted character alone in its own frame, in the order
submitted: a character's result depends only on its own frames, so the
batcher must return the same bytes. The rig carries state from frame to
frame (spring bones on a tail swinging with a sampled clip, after a
two-bone IK leg on a moving target), so a frame sent out of order, twice,
or with another dt would show.
"""

import concurrent.futures
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import grpc

import posewire
from posewire import ops, pb, types

SERVER = os.environ.get("POSEWIRE_SERVER", "127.0.0.1:50051")
BINARY = os.environ.get("POSEWIRE_SERVER_BINARY", "")
DT = 1 / 60

# A pelvis with a leg and a three-bone tail behind it.
BODY = posewire.make_skeleton(
    ["pelvis", "hip", "knee", "ankle", "tail1", "tail2", "tail3"],
    [-1, 0, 1, 2, 0, 4, 5],
    rest=[(0, 1, 0), (0.1, 0, 0), (0, -0.45, 0.02), (0, -0.45, -0.02),
          (0, 0, -0.1), (0, 0, -0.2), (0, 0, -0.2)])
# The pelvis swings 40 degrees about Y and back over a second: the tail's
# springs lag behind it.
SWAY = types.Clip(name="sway", duration=1.0, joints=[posewire.rotation_track(
    0, [0.0, 0.5, 1.0], [(0, 0, 0, 1), posewire.axis_angle((0, 1, 0), 40),
                         (0, 0, 0, 1)])])
RIG = [
    posewire.sample_clip_op("sway", 0.0),
    posewire.two_bone_ik_op("hip", "knee", "ankle", (0.1, 0.2, 0.2)),
    ops.Operation(spring_bones=ops.SpringBonesOp(
        rig=ops.SpringRig(root_joints=["tail1"]))),
]
SAMPLE_OP, IK_OP = 0, 1


def names(count):
    return [f"c{i}" for i in range(count)]


def register(session, characters):
    session.register_skeleton("body", BODY)
    session.register_clip("sway", "body", SWAY)
    session.register_rig("rig", "body", RIG)
    for name in characters:
        session.register_character(name, "rig")


def character_frame(name, tick):
    """The character's input at a tick: its own clip time and IK target,
    both moving from tick to tick."""
    index = int(name[1:])
    return pb.CharacterFrame(
        character_id=name, want_model_pose=True,
        op_updates=[
            pb.OpUpdate(op=SAMPLE_OP, time=0.05 * index + tick * DT),
            posewire.target_update(
                IK_OP, (0.1, 0.2 + 0.01 * tick, 0.2 + 0.02 * index))])


def pose_bytes(result):
    return (result.pose.SerializeToString(deterministic=True),
            result.model_pose.SerializeToString(deterministic=True))


class ServerProcess:
    """posewire-server with extra flags on an ephemeral loopback port."""

    def __init__(self, *flags):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log")
        self.process = subprocess.Popen(
            [BINARY, "--listen=127.0.0.1:0", "--threads=1", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.address = None
        for _ in range(400):
            with open(self.log.name) as f:
                match = re.search(r"listening on (127\.0\.0\.1:\d+)", f.read())
            if match:
                self.address = match.group(1)
                return
            time.sleep(0.025)
        self.stop(signal.SIGKILL)
        raise RuntimeError("posewire-server did not start")

    def stop(self, sig=signal.SIGTERM):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        status = self.process.wait(timeout=30)
        self.log.close()
        return status


class ServerTestCase(unittest.TestCase):

    def setUp(self):
        self.client = posewire.Client(SERVER, timeout=10)
        self.addCleanup(self.client.close)

    def open_session(self, characters, client=None):
        session = (client or self.client).session()
        self.addCleanup(session.close)
        register(session, characters)
        return session

    def batcher(self, session, **options):
        batcher = posewire.FrameBatcher(session, **options)
        self.addCleanup(batcher.close)
        return batcher

    def expected(self, characters, submits):
        """Each submit (character, dt, time) alone in its own frame on a
        fresh session, in order: what the batcher must answer."""
        reference = self.open_session(characters)
        results = []
        for character, dt, frame_time in submits:
            result = reference.frame([character], dt=dt, time=frame_time)
            results.append(result.characters[0])
        return results

    def assertSameAnswers(self, futures, expected):
        self.assertEqual(len(futures), len(expected))
        for i, (future, want) in enumerate(zip(futures, expected)):
            got = future.result(timeout=30)
            self.assertEqual(got.character_id, want.character_id, f"submit {i}")
            self.assertEqual(want.status.code, 0, want.status.message)
            self.assertEqual(pose_bytes(got), pose_bytes(want), f"submit {i}")


class BatchedTicksTest(ServerTestCase):
    """One frame per tick with every character equals one per character."""

    def test_a_tick_per_frame_solves_each_character_as_its_own_frames_do(self):
        characters, ticks = names(8), 20
        alone = self.open_session(characters)
        batched = self.open_session(characters)
        want = {}
        for tick in range(ticks):
            for name in characters:
                result = alone.frame([character_frame(name, tick)], dt=DT)
                alone.raise_for_characters(result)
                want[name, tick] = result.characters[0]

        got = {}
        batcher = self.batcher(batched, expected_characters=len(characters),
                               max_delay=60)
        for tick in range(ticks):
            futures = {name: batcher.submit(character_frame(name, tick), dt=DT)
                       for name in characters}
            for name, future in futures.items():
                got[name, tick] = future.result(timeout=30)
        batcher.close()

        for key, result in want.items():
            self.assertEqual(got[key].character_id, key[0])
            self.assertEqual(pose_bytes(got[key]), pose_bytes(result), key)
        # The state moved: the comparisons above are not of rest poses.
        tail = 6 * 10 + 3  # tail3's rotation
        first = want["c0", 0].pose.transforms[tail:tail + 4]
        self.assertNotEqual(first, want["c0", ticks - 1].pose.transforms[tail:tail + 4])
        self.assertNotEqual(want["c0", 5].pose.SerializeToString(),
                            want["c1", 5].pose.SerializeToString())

        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=ticks, characters=ticks * len(characters),
            full_tick=ticks))
        # The session's next frame follows the batcher's `ticks` frames.
        self.assertEqual(batched.frame(["c0"], dt=DT).sequence, ticks + 1)


class FlushRuleTest(ServerTestCase):
    """Each reason of the flush rule, on its own."""

    def test_a_lone_submit_is_sent_after_max_delay(self):
        session = self.open_session(["c0"])
        delay = 0.05
        batcher = self.batcher(session, max_delay=delay)
        started = time.monotonic()
        future = batcher.submit(character_frame("c0", 0), dt=DT)
        result = future.result(timeout=30)
        self.assertGreaterEqual(time.monotonic() - started, delay)
        self.assertSameAnswers([future], self.expected(
            ["c0"], [(character_frame("c0", 0), DT, None)]))
        self.assertEqual(result.character_id, "c0")
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=1, characters=1, max_delay=1))

    def test_max_characters_splits_a_tick_into_full_frames(self):
        characters = names(7)
        session = self.open_session(characters)
        batcher = self.batcher(session, max_characters=3, max_delay=60)
        # Ids alone: each character just runs its rig.
        futures = [batcher.submit(name, dt=DT) for name in characters]
        for future in futures[:6]:
            future.result(timeout=30)
        # The seventh waits for the next full frame, max_delay or a flush.
        self.assertFalse(futures[6].done())
        batcher.flush()
        self.assertTrue(futures[6].done())
        self.assertSameAnswers(futures, self.expected(
            characters, [(name, DT, None) for name in characters]))
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=3, characters=7, max_characters=2, flush=1))

    def test_a_repeated_character_sends_the_waiting_batch_first(self):
        session = self.open_session(["c0", "c1"])
        batcher = self.batcher(session, max_delay=60)
        submits = [(character_frame("c0", 0), DT, None),
                   (character_frame("c1", 0), DT, None),
                   (character_frame("c0", 1), DT, None)]
        futures = [batcher.submit(frame, dt=dt) for frame, dt, _ in submits]
        # c0's first frame went out with c1 as c0 came again.
        futures[0].result(timeout=30)
        self.assertFalse(futures[2].done())
        batcher.flush()
        self.assertSameAnswers(futures, self.expected(["c0", "c1"], submits))
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=2, characters=3, repeat=1, flush=1))

    def test_another_dt_or_time_sends_the_waiting_batch_first(self):
        characters = names(5)
        session = self.open_session(characters)
        batcher = self.batcher(session, max_delay=60)
        # A first frame each (springs start at rest, whatever the dt), then
        # second frames whose dt and time change along the way.
        first = [(character_frame(name, 0), DT, None) for name in characters]
        second = [(character_frame("c0", 1), DT, None),
                  (character_frame("c1", 1), DT, None),
                  # another dt
                  (character_frame("c2", 1), 2 * DT, None),
                  # the same dt, a time
                  (character_frame("c3", 1), 2 * DT, 1.0),
                  (character_frame("c4", 1), 2 * DT, 1.0)]
        futures = []
        for submits in (first, second):
            futures += [batcher.submit(frame, dt=dt, time=frame_time)
                        for frame, dt, frame_time in submits]
            batcher.flush()
        self.assertSameAnswers(futures,
                               self.expected(characters, first + second))
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=4, characters=10, dt_or_time=2, flush=2))
        # dt matters to this rig: c2's second frame at the first dt differs.
        at_first_dt = self.expected(["c2"], [
            (character_frame("c2", 0), DT, None),
            (character_frame("c2", 1), DT, None)])[1]
        self.assertNotEqual(pose_bytes(futures[7].result()),
                            pose_bytes(at_first_dt))

    def test_submits_from_many_threads_each_get_their_own_answer(self):
        characters, ticks = names(8), 10
        session = self.open_session(characters)
        batcher = self.batcher(session, max_delay=0.002)
        start = threading.Barrier(len(characters))
        answers = {name: [] for name in characters}

        def drive(name):
            start.wait()
            for tick in range(ticks):
                future = batcher.submit(character_frame(name, tick), dt=DT)
                answers[name].append(future.result(timeout=30))

        with concurrent.futures.ThreadPoolExecutor(len(characters)) as pool:
            for done in [pool.submit(drive, name) for name in characters]:
                done.result(timeout=60)

        for name in characters:
            want = self.expected(characters, [
                (character_frame(name, tick), DT, None)
                for tick in range(ticks)])
            for tick, (got, expected) in enumerate(zip(answers[name], want)):
                self.assertEqual(got.character_id, name)
                self.assertEqual(pose_bytes(got), pose_bytes(expected),
                                 (name, tick))
        counters = batcher.counters
        self.assertEqual(counters.characters, len(characters) * ticks)
        self.assertLessEqual(counters.batches, len(characters) * ticks)
        self.assertEqual(counters.batches, counters.repeat + counters.max_delay
                         + counters.dt_or_time + counters.max_characters
                         + counters.full_tick + counters.flush)

    def test_close_sends_what_waits_and_later_submits_raise(self):
        session = self.open_session(["c0"])
        batcher = posewire.FrameBatcher(session, max_delay=60)
        future = batcher.submit(character_frame("c0", 0), dt=DT)
        batcher.close()
        self.assertTrue(future.done())
        self.assertSameAnswers([future], self.expected(
            ["c0"], [(character_frame("c0", 0), DT, None)]))
        self.assertEqual(batcher.counters.flush, 1)
        with self.assertRaises(RuntimeError) as raised:
            batcher.submit("c0", dt=DT)
        self.assertIn("closed", str(raised.exception))
        batcher.close()
        batcher.flush()
        # The session is the caller's again.
        self.assertEqual(session.frame(["c0"], dt=DT).sequence, 2)


class ErrorsTest(ServerTestCase):
    """Per-character errors stay with their character; a refused frame
    fails its whole batch, and the batches after it go on."""

    def test_an_unknown_character_fails_only_its_own_future(self):
        session = self.open_session(["c0", "c1"])
        batcher = self.batcher(session, max_delay=60)
        futures = [batcher.submit(character_frame("c0", 0), dt=DT),
                   batcher.submit("ghost", dt=DT),
                   batcher.submit(character_frame("c1", 0), dt=DT)]
        batcher.flush()
        with self.assertRaises(posewire.PosewireError) as raised:
            futures[1].result()
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("no character 'ghost'", raised.exception.message)
        self.assertIn("character 'ghost': NOT_FOUND", str(raised.exception))
        self.assertSameAnswers([futures[0], futures[2]], self.expected(
            ["c0", "c1"], [(character_frame("c0", 0), DT, None),
                           (character_frame("c1", 0), DT, None)]))
        self.assertEqual(batcher.counters.failed_batches, 0)

    def test_a_time_going_backwards_fails_the_batch_and_the_next_goes_on(self):
        session = self.open_session(["c0", "c1"])
        batcher = self.batcher(session, max_delay=60)

        def tick(tick_number, frame_time):
            futures = [batcher.submit(character_frame(name, tick_number),
                                      dt=DT, time=frame_time)
                       for name in ("c0", "c1")]
            batcher.flush()
            return futures

        first = tick(0, 2.0)
        refused = tick(1, 1.0)
        last = tick(1, 3.0)
        for future in refused:
            with self.assertRaises(posewire.PosewireError) as raised:
                future.result()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("frame.time: 1 is before the last frame's time 2",
                          raised.exception.message)
        # The refused frame changed nothing on the server.
        self.assertSameAnswers(first + last, self.expected(["c0", "c1"], [
            (character_frame("c0", 0), DT, 2.0),
            (character_frame("c1", 0), DT, 2.0),
            (character_frame("c0", 1), DT, 3.0),
            (character_frame("c1", 1), DT, 3.0)]))
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=3, characters=6, failed_batches=1, flush=3))

    @unittest.skipUnless(BINARY, "POSEWIRE_SERVER_BINARY names no server")
    def test_more_characters_than_the_server_allows_fail_the_whole_batch(self):
        server = ServerProcess("--max_characters=2")
        self.addCleanup(server.stop)
        client = posewire.Client(server.address, timeout=10)
        self.addCleanup(client.close)
        limit = client.info().limits.max_characters_per_batch
        self.assertEqual(limit, 2)
        session = self.open_session(names(3), client)
        batcher = self.batcher(session, max_characters=limit + 1,
                               max_delay=60)
        too_many = [batcher.submit(name, dt=DT) for name in names(3)]
        batcher.flush()
        errors = []
        for future in too_many:
            with self.assertRaises(posewire.PosewireError) as raised:
                future.result()
            errors.append(raised.exception)
        self.assertEqual(errors[0].code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("3 characters exceed this server's limit of 2",
                      errors[0].message)
        # One error, shared by the batch.
        self.assertTrue(all(error is errors[0] for error in errors))
        fits = [batcher.submit(name, dt=DT) for name in names(2)]
        batcher.flush()
        self.assertEqual([f.result().character_id for f in fits], ["c0", "c1"])
        self.assertEqual(batcher.counters.failed_batches, 1)

    @unittest.skipUnless(BINARY, "POSEWIRE_SERVER_BINARY names no server")
    def test_a_lost_server_fails_the_batch_and_every_later_one_is_tried(self):
        server = ServerProcess()
        self.addCleanup(server.stop)
        client = posewire.Client(server.address, timeout=10)
        self.addCleanup(client.close)
        session = self.open_session(["c0", "c1"], client)
        batcher = self.batcher(session, max_delay=60)
        answered = batcher.submit("c0", dt=DT)
        batcher.flush()
        self.assertEqual(answered.result().character_id, "c0")
        server.stop(signal.SIGKILL)
        lost = [batcher.submit(name, dt=DT) for name in ("c0", "c1")]
        batcher.flush()
        later = batcher.submit("c0", dt=DT)
        batcher.close()
        for future in lost:
            with self.assertRaises(posewire.PosewireError) as raised:
                future.result()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAVAILABLE)
        # Tried too: the session (without auto_resume) says it has ended.
        with self.assertRaises(posewire.PosewireError) as raised:
            later.result()
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("the session is closed", raised.exception.message)
        self.assertEqual(batcher.counters.failed_batches, 2)
        self.assertEqual(batcher.counters.batches, 3)


class ArgumentsTest(unittest.TestCase):
    """Bad arguments are refused by name before anything is sent."""

    def test_bad_constructor_arguments_raise_value_error_naming_them(self):
        bad = [
            ({"expected_characters": -1}, "expected_characters"),
            ({"max_characters": 0}, "max_characters"),
            ({"max_characters": posewire.batcher.MAX_CHARACTERS_BOUND + 1},
             "max_characters"),
            ({"expected_characters": 65, "max_characters": 64},
             "expected_characters (65) exceeds max_characters (64)"),
            ({"max_delay": float("nan")}, "max_delay"),
            ({"max_delay": float("inf")}, "max_delay"),
            ({"max_delay": -0.001}, "max_delay"),
        ]
        for options, named in bad:
            with self.subTest(options):
                with self.assertRaises(ValueError) as raised:
                    posewire.FrameBatcher(RecordingSession(), **options)
                self.assertIn(named, str(raised.exception))
        with self.assertRaises(TypeError):
            posewire.FrameBatcher(RecordingSession(), max_characters=1.5)

    def test_bad_submit_arguments_raise_and_nothing_is_sent(self):
        session = RecordingSession()
        with posewire.FrameBatcher(session, max_delay=0) as batcher:
            for dt in (float("nan"), float("inf"), -DT):
                with self.assertRaises(ValueError) as raised:
                    batcher.submit("c0", dt=dt)
                self.assertIn("dt must be finite and >= 0", str(raised.exception))
            with self.assertRaises(ValueError) as raised:
                batcher.submit("c0", time=float("nan"))
            self.assertIn("time must be finite", str(raised.exception))
            with self.assertRaises(TypeError) as raised:
                batcher.submit(42)
            self.assertIn("CharacterFrame", str(raised.exception))
        self.assertEqual(session.frames, [])


class RecordingSession:
    """Stands in for a Session: records each frame's character ids and
    answers each character OK, or holds the frame until released."""

    def __init__(self, failures=()):
        self.frames = []
        # Errors raised by the first frames, one per frame.
        self.failures = list(failures)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def frame(self, characters, dt=0.0, sequence=None, time=None):
        self.frames.append([c.character_id for c in characters])
        self.entered.set()
        self.release.wait(30)
        if self.failures:
            raise self.failures.pop(0)
        return pb.FrameResult(sequence=len(self.frames), characters=[
            pb.CharacterResult(character_id=c.character_id)
            for c in characters])


class InFlightTest(unittest.TestCase):
    """What happens while a frame is in flight, on a stand-in session (the
    timing of a real server is not under the test's control)."""

    def test_submits_during_a_frame_in_flight_wait_for_the_next_batch(self):
        session = RecordingSession()
        session.release.clear()
        with posewire.FrameBatcher(session, max_delay=0) as batcher:
            first = batcher.submit("a")
            self.assertTrue(session.entered.wait(30))
            waiting = [batcher.submit("b"), batcher.submit("c"),
                       batcher.submit("d")]
            # A cancelled future's character is left out of its frame.
            self.assertTrue(waiting[1].cancel())
            session.release.set()
            self.assertEqual(first.result(timeout=30).character_id, "a")
            self.assertEqual([waiting[0].result(timeout=30).character_id,
                              waiting[2].result(timeout=30).character_id],
                             ["b", "d"])
        self.assertEqual(session.frames, [["a"], ["b", "d"]])

    def test_a_broken_stream_fails_its_batch_and_the_next_batch_is_sent(self):
        broken = posewire.PosewireError(grpc.StatusCode.UNAVAILABLE,
                                        "the session stream closed", "Session")
        session = RecordingSession(failures=[broken])
        with posewire.FrameBatcher(session, max_delay=60) as batcher:
            lost = [batcher.submit("a"), batcher.submit("b")]
            batcher.flush()
            later = batcher.submit("a")
        for future in lost:
            self.assertIs(future.exception(timeout=30), broken)
        self.assertEqual(later.result(timeout=30).character_id, "a")
        self.assertEqual(session.frames, [["a", "b"], ["a"]])
        self.assertEqual(batcher.counters, posewire.BatcherCounters(
            batches=2, characters=3, failed_batches=1, flush=2))


if __name__ == "__main__":
    unittest.main(verbosity=2)
