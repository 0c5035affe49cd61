#!/usr/bin/python3
"""A leg walking, solved by a posewire server.

Builds a 3-joint leg (hip, knee, ankle) and a one-second walk cycle for it
by hand (hip swings -25..+25 degrees, knee bends up to 60 degrees), then:
  1. one unary Solve: the cycle sampled at 0.25 s, blended 50% towards the
     rest pose, with the model-space pose, so we can print where the ankle is;
  2. a streaming session: two characters of one rig, the second half a cycle
     behind, 12 frames at 10 Hz of animation time.

  . <build>/clients/python/env.sh
  /usr/bin/python3 clients/python/examples/solve_walk.py --server=127.0.0.1:50051
"""

import argparse

import posewire
from posewire import ops, pb, types

LEG = ["hip", "knee", "ankle"]


def walk_cycle():
    """Hip swing about X and a knee bend, keyed at 0, 0.25, 0.5, 0.75, 1 s."""
    times = [0.0, 0.25, 0.5, 0.75, 1.0]
    hip = [posewire.axis_angle((1, 0, 0), a) for a in (-25, 0, 25, 0, -25)]
    knee = [posewire.axis_angle((1, 0, 0), a) for a in (0, 60, 10, 5, 0)]
    return types.Clip(name="walk", duration=1.0, joints=[
        posewire.rotation_track(0, times, hip),
        posewire.rotation_track(1, times, knee),
    ])


def sample(time, clip="walk"):
    return ops.Operation(sample_clip=ops.SampleClipOp(
        sample=ops.ClipSample(clip=clip, time=time)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    args = parser.parse_args()

    # A leg 1 unit tall: hip at the top, 0.5 to the knee, 0.5 to the ankle.
    skeleton = posewire.make_skeleton(
        LEG, [-1, 0, 1], rest=[(0, 1, 0), (0, -0.5, 0), (0, -0.5, 0)])
    clip = walk_cycle()

    with posewire.Client(args.server) as client:
        info = client.info()
        print(f"server {info.version} ({info.git_revision}), operations: "
              f"{', '.join(info.operations)}")

        # 1. Unary: sample, then blend halfway back to the rest pose.
        half_rest = ops.Operation(blend=ops.BlendOp(layers=[
            ops.BlendLayer(source=ops.PoseSource(current=True), weight=0.5),
            ops.BlendLayer(source=ops.PoseSource(rest=True), weight=0.5),
        ]))
        request = pb.SolveRequest(clips=[clip], characters=[pb.CharacterInput(
            id="leg", skeleton=pb.SkeletonRef(skeleton=skeleton),
            ops=[sample(0.25), half_rest], want_model_pose=True)])
        out = client.solve(request).characters[0]
        local = posewire.unpack_pose(out.pose)
        model = posewire.unpack_pose(out.model_pose)
        print("unary solve at t=0.25, 50% towards rest:")
        for name, l, m in zip(LEG, local, model):
            print(f"  {name:6s} local rotation {fmt(l.rotation)}  "
                  f"model position {fmt(m.translation)}")
        print(f"  ops: {[r.op for r in out.ops]}, skeleton hash "
              f"{out.skeleton_hash[:12]}...")

        # 2. Streaming: two legs half a cycle apart.
        with client.session() as session:
            session.register_skeleton("leg", skeleton)
            session.register_clip("walk", "leg", clip)
            session.register_rig("walker", "leg", [sample(0.0)])
            session.register_character("left", "walker")
            session.register_character("right", "walker")
            print("session: ankle height of each leg per frame")
            for i in range(12):
                t = 0.1 * i
                frame = [
                    pb.CharacterFrame(character_id="left", ops=[sample(t)],
                                      want_model_pose=True),
                    pb.CharacterFrame(character_id="right",
                                      ops=[sample(t + 0.5)],
                                      want_model_pose=True),
                ]
                result = session.raise_for_characters(
                    session.frame(frame, dt=0.1))
                heights = [posewire.unpack_pose(c.model_pose)[2].translation[1]
                           for c in result.characters]
                print(f"  frame {result.sequence:2d}  t={t:.1f}s  "
                      f"left {heights[0]:+.3f}  right {heights[1]:+.3f}")


def fmt(values):
    return "(" + ", ".join(f"{v:+.3f}" for v in values) + ")"


if __name__ == "__main__":
    main()
