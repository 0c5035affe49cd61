#!/usr/bin/python3
"""A leg put on a target, on a BVH file, in process and on a server.

Reads the CMU walk with posewire.local (the solver core in this process),
takes the left ankle's position two seconds into the clip as the target
(targets are in model space: the skeleton's root space), samples the clip at
one second and solves the left leg onto it with two-bone IK, once in process
and once on a posewire server, and checks that both answers are the same
bits.

  . <build>/clients/python/env.sh
  /usr/bin/python3 clients/python/examples/bvh_two_bone.py --server=127.0.0.1:50051
"""

import argparse
import os

import numpy

import posewire
from posewire import local

HERE = os.path.dirname(os.path.abspath(__file__))
WALK = os.path.join(HERE, "..", "..", "..", "tests", "data",
                    "cmu_131_01_walk.bvh")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--bvh", default=WALK, help="a BVH file of the CMU "
                        "skeleton (LeftHip, LeftKnee, LeftAnkle)")
    args = parser.parse_args()

    walk = local.load(args.bvh)
    clip = walk.clip_names[0]
    solver = local.Solver()
    target = solver.solve_pose(walk, [posewire.sample_clip_op(clip, 2.0)]
                               ).position("LeftAnkle")
    leg = [posewire.sample_clip_op(clip, 1.0),
           posewire.two_bone_ik_op("LeftHip", "LeftKnee", "LeftAnkle", target)]

    here = solver.solve_pose(walk, leg)
    with posewire.Client(args.server) as client:
        there = client.solve_pose(walk, leg)

    result = here.ops[1]
    print(f"{os.path.basename(args.bvh)}: {len(walk.joint_names)} joints, "
          f"clip {clip!r}")
    print(f"target (model space) {numpy.round(target, 3).tolist()}")
    print(f"reached {result.reached}, error {result.error:.2e}, "
          f"ankle at {numpy.round(here.position('LeftAnkle'), 3).tolist()}")
    same = (here.pose.tobytes() == there.pose.tobytes()
            and here.model_pose.tobytes() == there.model_pose.tobytes())
    print(f"in process and on the server: {'the same bits' if same else 'DIFFERENT'}")
    if not (result.reached and same):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
