/* libtorture_dl.c - the library dlopen_loop.c opens and closes: allocates through the PLT.
 * Build: cc -shared -fPIC -g -O0 -o libtorture_dl.so libtorture_dl.c
 * dl_work() makes 100 malloc/free pairs and leaks 10 B in dl_leak.
 */
#include <stdlib.h>

void *volatile dl_sink;

__attribute__((noinline)) static void dl_leak(void) { dl_sink = malloc(10); }

void dl_work(void) {
    for (int i = 0; i < 100; i++) {
        char *p = malloc(8 + i);
        p[0] = 1;
        free(p);
    }
    dl_leak();
}
