/* main.c - the npusim binary: everything happens in cli_main (sim/cli/cli.c). */
#include "cli.h"

int main(int argc, char **argv) { return cli_main(argc, argv); }
