/* libleaky.c - a shared library that leaks; dlopen_main.c loads, calls and unloads it.
 * Build: cc -shared -fPIC -g -O0 -o libleaky.so libleaky.c
 *
 * Expected `memshim report` for dlopen_main, sites from this file exactly:
 *   lib_leak 555 B in 1 block; frame 0 is lib_leak with module ending in "/libleaky.so" and
 *   file ending in "libleaky.c" (named even though the library was dlclosed before exit),
 *   frame 1 is main (in dlopen_main).
 */
#include <stdlib.h>
#include <string.h>

void *volatile lib_sink;

__attribute__((noinline)) void lib_leak(void) {
    char *p = malloc(555);
    memset(p, 'l', 555);
    lib_sink = p;
}
