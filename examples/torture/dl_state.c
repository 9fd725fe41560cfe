/* dl_state.c - the loader's per-thread error state and a second link-map namespace.
 * Build: cc -g -O0 -o dl_state dl_state.c -ldl
 * Asks dlerror() before any dl call of its own (a shim that probed for a library or a symbol and
 * left its failure behind changes this answer), then after a successful dlsym, then opens libm in a
 * new namespace with dlmopen and calls cos there. Leaks 4242 B in one block from dl_state_leak.
 * Prints "first none\nafter dlsym none\ncos 1\nfailed lookup reported 1". Exit status 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile keep;

static void dl_state_leak(void) {
    keep = malloc(4242);
    memset(keep, 1, 4242);
}

int main(void) {
    printf("first %s\n", dlerror() ? "stale" : "none");
    void *p = dlsym(RTLD_DEFAULT, "printf");
    printf("after dlsym %s\n", dlerror() || !p ? "stale" : "none");
    void *m = dlmopen(LM_ID_NEWLM, "libm.so.6", RTLD_NOW);
    if (!m) {
        fprintf(stderr, "dlmopen: %s\n", dlerror());
        return 1;
    }
    double (*cosine)(double) = (double (*)(double))dlsym(m, "cos");
    printf("cos %.0f\n", cosine ? cosine(0.0) : -1.0);
    dlclose(m);
    /* The program's own failure is its own to read. */
    int reported = dlsym(RTLD_DEFAULT, "no_such_symbol_here") == NULL && dlerror() != NULL;
    printf("failed lookup reported %d\n", reported);
    dl_state_leak();
    return 0;
}
