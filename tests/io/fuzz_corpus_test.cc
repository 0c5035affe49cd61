// The asset readers on the fuzzers' inputs, in the ordinary (gcc) suite:
// ParseGltf, the in-memory entry point the glTF fuzzer drives, must agree
// with ReadGltfFile on the real rigs and never touch the file system; every
// committed seed must still load (a seed that fails only fuzzes the first
// error path); and every input a fuzzer ever crashed on
// (fuzz/regressions/<target>/) must now be answered with a status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"

namespace posewire {
namespace fuzz_corpus_test {

using ::testing::HasSubstr;

const std::filesystem::path kFuzzDir =
    std::filesystem::path(POSEWIRE_TEST_DATA_DIR) / ".." / ".." / "fuzz";

std::string ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::Span<const unsigned char> Bytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const unsigned char*>(s.data()),
                             s.size());
}

// The files of fuzz/<kind>/<target>/, sorted (none if it does not exist).
std::vector<std::filesystem::path> Inputs(const std::string& kind,
                                          const std::string& target) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = kFuzzDir / kind / target;
  if (!std::filesystem::exists(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What gltf_reader_fuzzer does with an input: the first byte picks the
// options, the rest is the file.
absl::StatusOr<ImportedAsset> ParseLikeTheGltfFuzzer(const std::string& in) {
  GltfReadOptions options;
  const uint8_t selector = in.empty() ? 0 : static_cast<uint8_t>(in[0]);
  if (selector >= 192 && selector < 224) options.skin = (selector - 192) % 4;
  if (selector >= 224) options.fold_non_joint_ancestors = false;
  const std::string file = in.empty() ? in : in.substr(1);
  return ParseGltf(Bytes(file), "fuzz.gltf", options);
}

TEST(ParseGltf, RealRigsFromMemoryMatchTheFileReader) {
  for (const char* name :
       {"RiggedSimple.glb", "Fox.glb", "RobotExpressive.glb"}) {
    SCOPED_TRACE(name);
    const std::string path = absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", name);
    absl::StatusOr<ImportedAsset> file = ReadGltfFile(path);
    absl::StatusOr<ImportedAsset> memory =
        ParseGltf(Bytes(ReadBytes(path)), name);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(memory.ok()) << memory.status();
    EXPECT_EQ(memory->source, name);
    const Skeleton& a = file->skeleton;
    const Skeleton& b = memory->skeleton;
    ASSERT_EQ(a.num_joints(), b.num_joints());
    for (int j = 0; j < a.num_joints(); ++j) {
      EXPECT_EQ(a.joint_name(j), b.joint_name(j));
      EXPECT_EQ(a.parent(j), b.parent(j));
      EXPECT_EQ(a.rest_pose()[j].translation, b.rest_pose()[j].translation);
      EXPECT_EQ(a.rest_pose()[j].rotation.coeffs(),
                b.rest_pose()[j].rotation.coeffs());
    }
    ASSERT_EQ(file->clips.size(), memory->clips.size());
    for (size_t c = 0; c < file->clips.size(); ++c) {
      EXPECT_EQ(file->clips[c].name, memory->clips[c].name);
      EXPECT_EQ(file->clips[c].duration, memory->clips[c].duration);
    }
  }
}

TEST(ParseGltf, ExternalBufferUriIsNeverFollowedFromMemory) {
  // A real file beside the working directory that a path-relative URI
  // would name: from memory there is no directory, so nothing is read.
  const std::string doc = R"({"asset":{"version":"2.0"},
      "buffers":[{"byteLength":4,"uri":"CMakeCache.txt"}]})";
  absl::StatusOr<ImportedAsset> asset = ParseGltf(Bytes(doc), "upload.gltf");
  ASSERT_FALSE(asset.ok());
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(asset.status().message(), HasSubstr("upload.gltf"));
}

TEST(ParseGltf, EmptyAndForeignBytesAreInvalidArgument) {
  for (const std::string& bytes :
       {std::string(), std::string("glTF"), std::string("not json")}) {
    absl::StatusOr<ImportedAsset> asset = ParseGltf(Bytes(bytes), "x.gltf");
    ASSERT_FALSE(asset.ok());
    EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument)
        << asset.status();
  }
}

TEST(FuzzCorpus, EveryBvhSeedLoads) {
  const auto seeds = Inputs("corpus", "bvh_reader_fuzzer");
  ASSERT_GE(seeds.size(), 4u);
  for (const auto& path : seeds) {
    absl::StatusOr<ImportedAsset> asset =
        ParseBvh(ReadBytes(path), path.filename().string());
    EXPECT_TRUE(asset.ok()) << asset.status();
  }
}

TEST(FuzzCorpus, EveryGltfSeedLoads) {
  const auto seeds = Inputs("corpus", "gltf_reader_fuzzer");
  ASSERT_GE(seeds.size(), 3u);
  for (const auto& path : seeds) {
    absl::StatusOr<ImportedAsset> asset =
        ParseLikeTheGltfFuzzer(ReadBytes(path));
    EXPECT_TRUE(asset.ok()) << path.filename() << ": " << asset.status();
    if (asset.ok()) {
      EXPECT_GE(asset->skeleton.num_joints(), 2);
    }
  }
}

TEST(FuzzRegressions, BvhInputsThatOnceCrashedAreRejectedCleanly) {
  for (const auto& path : Inputs("regressions", "bvh_reader_fuzzer")) {
    SCOPED_TRACE(path.filename().string());
    absl::StatusOr<ImportedAsset> asset = ParseBvh(ReadBytes(path), "r.bvh");
    if (!asset.ok()) {
      EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(FuzzRegressions, GltfInputsThatOnceCrashedAreRejectedCleanly) {
  for (const auto& path : Inputs("regressions", "gltf_reader_fuzzer")) {
    SCOPED_TRACE(path.filename().string());
    absl::StatusOr<ImportedAsset> asset =
        ParseLikeTheGltfFuzzer(ReadBytes(path));
    if (!asset.ok()) {
      EXPECT_NE(asset.status().code(), absl::StatusCode::kInternal);
      EXPECT_THAT(asset.status().message(), HasSubstr("fuzz.gltf"));
    }
  }
}

}  // namespace fuzz_corpus_test
}  // namespace posewire
