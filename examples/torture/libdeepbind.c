/* libdeepbind.c - the library deepbind.c opens with RTLD_DEEPBIND: it finds malloc in its own
 * dependencies (libc) before the global scope, so a preloaded malloc is bypassed.
 * Build: cc -shared -fPIC -g -O0 -o libdeepbind.so libdeepbind.c
 * deep_work() makes 1000 malloc/free pairs and leaks 4321 B in deep_leak.
 */
#include <stdlib.h>

void *volatile deep_sink;

__attribute__((noinline)) static void deep_leak(void) { deep_sink = malloc(4321); }

void deep_work(void) {
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(8 + i);
        p[0] = 1;
        free(p);
    }
    deep_leak();
}
