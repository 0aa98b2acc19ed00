// ttap: the single binary. Wiring only; everything lives in the libraries.
#include "server/cli.h"

int main(int argc, char** argv) { return ttap::RunCli(argc, argv); }
