"""A replica lost under a Python session that resumes by itself.

Starts two real posewire-server processes (POSEWIRE_SERVER_BINARY; run by
tests/e2e/python_client_e2e.sh), opens a session with auto_resume over a
channel listing both, and loses the first one mid-session: drained with
SIGTERM (it hands the session over) or killed with SIGKILL (the client
resumes from its last periodic snapshot and replays the frames answered
since). Every answer must be the one an uninterrupted session gives, float
for float.
"""

import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import posewire
from posewire import ops, types

BINARY = os.environ.get("POSEWIRE_SERVER_BINARY", "")

LEG = posewire.make_skeleton(
    ["hip", "knee", "ankle"], [-1, 0, 1],
    rest=[(0, 1, 0), (0, -0.5, 0), (0, -0.5, 0)])
BEND_CLIP = types.Clip(name="bend", duration=1.0, joints=[
    posewire.rotation_track(1, [0.0, 1.0], [
        (0, 0, 0, 1), posewire.axis_angle((1, 0, 0), 90)])])
FRAMES = 20


class ServerProcess:
    """posewire-server on an ephemeral loopback port."""

    def __init__(self):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log")
        self.process = subprocess.Popen(
            [BINARY, "--listen=127.0.0.1:0", "--threads=1"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        for _ in range(400):
            with open(self.log.name) as f:
                match = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
            if match:
                self.port = int(match.group(1))
                break
            time.sleep(0.025)
        if self.port is None:
            raise RuntimeError("posewire-server did not start")

    def stop(self, sig):
        self.process.send_signal(sig)
        return self.process.wait(timeout=30)


def register(session):
    session.register_skeleton("leg", LEG)
    session.register_clip("bend", "leg", BEND_CLIP)
    session.register_rig("player", "leg", [ops.Operation(
        crossfade=ops.CrossfadeOp(
            commands=[ops.CrossfadeCommand(play="bend")]))])
    session.register_character("a", "player")


def frame_poses(session, frames):
    return [list(session.frame(["a"], dt=0.05).characters[0].pose.transforms)
            for _ in range(frames)]


@unittest.skipUnless(BINARY, "POSEWIRE_SERVER_BINARY names no server to start")
class FailoverTest(unittest.TestCase):

    def setUp(self):
        self.first = ServerProcess()
        self.second = ServerProcess()

    def tearDown(self):
        for server in (self.first, self.second):
            if server.process.poll() is None:
                server.stop(signal.SIGKILL)

    def uninterrupted(self):
        with posewire.Client(f"127.0.0.1:{self.second.port}") as client:
            with client.session() as session:
                register(session)
                return frame_poses(session, FRAMES)

    def resuming_session(self, client, events, **options):
        return client.session(auto_resume=True, on_resume=events.append,
                              **options)

    def both(self):
        return posewire.Client(
            f"ipv4:127.0.0.1:{self.first.port},127.0.0.1:{self.second.port}")

    def test_sigterm_hands_over_and_nothing_is_replayed(self):
        expected = self.uninterrupted()
        events = []
        with self.both() as client:
            with self.resuming_session(client, events) as session:
                register(session)
                got = frame_poses(session, 8)
                self.assertEqual(self.first.stop(signal.SIGTERM), 0)
                got += frame_poses(session, FRAMES - 8)
                self.assertEqual(got, expected)
                self.assertEqual(len(events), 1)
                self.assertTrue(events[0].handover)
                self.assertEqual(events[0].after_sequence, 8)
                self.assertEqual(events[0].replayed, 0)
                self.assertEqual(session.resume_counters.resumes, 1)
                self.assertEqual(session.resume_counters.handovers, 1)

    def test_sigkill_resumes_from_the_last_snapshot_and_replays(self):
        expected = self.uninterrupted()
        events = []
        with self.both() as client:
            with self.resuming_session(client, events,
                                       snapshot_every_frames=3) as session:
                register(session)
                got = frame_poses(session, 8)
                self.first.stop(signal.SIGKILL)
                got += frame_poses(session, FRAMES - 8)
                self.assertEqual(got, expected)
                self.assertEqual(len(events), 1)
                self.assertFalse(events[0].handover)
                # Snapshots after frames 3 and 6: 7 and 8 are replayed.
                self.assertEqual(events[0].after_sequence, 6)
                self.assertEqual(events[0].replayed, 2)
                self.assertEqual(session.resume_counters.replayed, 2)

    def test_without_auto_resume_the_loss_raises(self):
        with posewire.Client(f"127.0.0.1:{self.first.port}") as client:
            with client.session() as session:
                register(session)
                frame_poses(session, 2)
                self.first.stop(signal.SIGKILL)
                with self.assertRaises(posewire.PosewireError) as raised:
                    session.frame(["a"], dt=0.05)
                self.assertIn(raised.exception.code.name,
                              ("UNAVAILABLE", "CANCELLED"))
                self.assertTrue(session.closed)


if __name__ == "__main__":
    unittest.main()
