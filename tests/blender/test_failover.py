"""A live session carried over to another replica, in headless Blender.

run_blender_test.sh starts two servers and passes their gRPC address list
("ipv4:127.0.0.1:A,127.0.0.1:B") and the first one's pid. A spring chain
droops live under gravity on the first replica; the test stops it with
SIGTERM, as an orchestrator drains a pod, and animation goes on. The
session must carry over without the artist seeing it: the link stays
CONNECTED (never LOST), the panel says the session was resumed, the
characters are not registered again, and the chain goes on from where it
hung instead of springing back to rest (a restarted simulation's pop).
"""

import os
import signal
import sys

# Blender's Python ignores PYTHONDONTWRITEBYTECODE: keep the tree clean.
sys.dont_write_bytecode = True
import bpy

sys.path.insert(0, os.path.dirname(__file__))
import blender_helpers as h  # noqa: E402

FIRST_PID = int(h.ARGS[2]) if len(h.ARGS) > 2 else 0


class Failover(h.WalkTestCase):

    def tip(self):
        bpy.context.view_layer.update()
        return (self.obj.matrix_world @ self.obj.pose.bones["Tail2"].tail).z

    def test_draining_replica_hands_the_live_session_over(self):
        self.assertGreater(FIRST_PID, 0, "run with two_replicas")
        h.add_ponytail(self.obj)
        self.scene.frame_set(1)
        rest = self.tip()
        self.assertEqual(bpy.ops.posewire.live(action="START"), {"FINISHED"})
        live = self.runtime.RUNTIME.rigs[self.obj.name]
        self.pump(live.settled, "the first live frame")
        link = self.runtime.RUNTIME.link
        for frame in range(2, 12):
            self.scene.frame_set(frame)
            self.pump(live.settled, f"frame {frame}")
        before = self.tip()
        self.assertLess(before, rest - 0.5, "the chain did not droop")
        registered = dict(link._character_ids)

        os.kill(FIRST_PID, signal.SIGTERM)
        states = set()
        for frame in range(12, 20):
            self.scene.frame_set(frame)
            self.pump(lambda: (states.add(self.runtime.status()[0]) or
                               live.settled()), f"frame {frame}")
            if frame == 12:
                after = self.tip()
        self.assertEqual(self.obj.posewire.last_error, "")
        self.assertNotIn("LOST", states)
        self.assertEqual(link.resumes, 1)
        state, message = self.runtime.status()
        self.assertEqual(state, "CONNECTED")
        self.assertIn("session resumed on another replica", message)
        self.assertIn("handed over", message)
        # Same session, same characters: nothing was registered again.
        self.assertEqual(link._character_ids, registered)
        # The chain went on from where it hung: one more frame moves it by
        # far less than springing back to rest would.
        self.assertLess(abs(after - before), 0.25 * (rest - before))
        self.assertLess(self.tip(), before)


if __name__ == "__main__":
    h.run([Failover])
