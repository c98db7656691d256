// Replays a fuzz target's corpus without libFuzzer, so that every corpus file (and every
// past finding saved there) is re-checked by `bazel test` with the default compiler.
// libFuzzer builds of the same targets come from tools/fuzz.
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) {
    std::fprintf(stderr, "cannot open corpus %s\n", dir.c_str());
    return 2;
  }
  std::vector<std::string> files;
  while (dirent* entry = readdir(listing)) {
    if (entry->d_name[0] != '.') files.push_back(dir + "/" + entry->d_name);
  }
  closedir(listing);
  if (files.empty()) {
    std::fprintf(stderr, "corpus %s is empty\n", dir.c_str());
    return 1;
  }
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs from %s\n", files.size(), dir.c_str());
  return 0;
}
