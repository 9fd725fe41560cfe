/* peak.c - what the heap held at its peak differs from what it held at the end.
 *
 *   build_cache: malloc 1000000, used, then freed    -> the peak (1000000 live from here)
 *   keep_small:  malloc 10000, never freed           -> the only leak of this file's functions
 *
 * Expected: `memshim export --collapsed --by peak` weighs build_cache 1000000 and has no keep_small;
 * `--by leaked` has keep_small 10000 and no build_cache. Prints "done"; exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) char *build_cache(void) {
    char *p = malloc(1000000);
    if (p) memset(p, 1, 1000000);
    return p;
}

__attribute__((noinline)) char *keep_small(void) { return malloc(10000); }

int main(void) {
    char *cache = build_cache();
    int sum = cache ? cache[999999] : 0;
    free(cache);
    char *small = keep_small();
    printf("done %d %d\n", sum, small != NULL);
    return 0;
}
