// A program outside posewire's tree that links the installed solver core
// (find_package(posewire) or pkg-config posewire-assets): it reads a BVH
// clip, samples two frames half a second apart, and moves the left leg of
// the first so its ankle reaches where the second frame has it.
//
//   posewire_consumer CLIP.bvh
//
// Prints the distance before and after the solve; exits 1 on any error.
#include <cstdio>

#include "left_leg.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: posewire_consumer CLIP.bvh\n");
    return 2;
  }
  absl::StatusOr<posewire::ImportedAsset> asset =
      posewire::ReadBvhFile(argv[1]);
  absl::StatusOr<consumer::LeftLegSolve> solve =
      asset.ok() ? consumer::SolveLeftLeg(*asset) : asset.status();
  if (!solve.ok()) {
    std::fprintf(stderr, "posewire_consumer: %s\n",
                 solve.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "left ankle to its position 0.5 s later: %.4f before, %.6f "
      "after (reached: %s)\n",
      solve->distance_before, solve->result.error,
      solve->result.reached ? "yes" : "no");
  return 0;
}
