/* fixable.c: a leak whose size the command line sets, to check `memshim diff` before and after a fix.
 * `fixable N` leaks N blocks of 1000 B in `leak_per_request` (N defaults to 10) and always leaks one
 * 64 B block in `keep_config`. Comparing `fixable 10` with `fixable 0`: leak_per_request goes from
 * 10000 B in 10 blocks to nothing; keep_config does not change.
 */
#include <stdlib.h>
#include <string.h>

static void *kept[1000];
static void *config;

__attribute__((noinline)) void *leak_per_request(void) {
    void *p = malloc(1000);
    memset(p, 1, 1000);
    return p;
}

__attribute__((noinline)) void *keep_config(void) {
    void *p = malloc(64);
    memset(p, 2, 64);
    return p;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    config = keep_config();
    for (int i = 0; i < n && i < 1000; i++) {
        kept[i] = leak_per_request();
    }
    return config == NULL;
}
