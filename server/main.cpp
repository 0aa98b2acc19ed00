// ttap: the single binary. Wiring only; everything lives in the libraries: the product's
// commands (server/cli.h) and the benchmark harness's gen, eval and train (bench/harness/).
#include <malloc.h>

#include "bench/harness/eval_command.h"
#include "bench/harness/gen_command.h"
#include "bench/harness/train_command.h"
#include "server/cli.h"

int main(int argc, char** argv) {
  // Large trace columns and chunk buffers are allocated and freed in waves while a trace loads;
  // a fixed mmap threshold hands freed blocks back to the OS at once instead of letting glibc's
  // adaptive threshold keep them in the heap (peak RSS stays well under half the JSON size).
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  return ttap::RunCli(argc, argv,
                      {{"gen", ttap::RunGenCommand},
                       {"eval", ttap::RunEvalCommand},
                       {"train", ttap::RunTrainCommand}});
}
