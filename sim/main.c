/* sim/main.c: the ksim command line (placeholder until the program lands). */
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ksim: not built yet\n");
    return 3;
}
