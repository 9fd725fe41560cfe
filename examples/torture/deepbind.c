/* deepbind.c - dlopen argv[1] (libdeepbind.so) with RTLD_DEEPBIND and call it.
 * Build: cc -g -O0 -o deepbind deepbind.c -ldl
 * The library leaks 4321 B in deep_leak (1 block). Prints "deepbind ok".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*work)(void) = (void (*)(void))dlsym(h, "deep_work");
    if (!work)
        return 1;
    work();
    printf("deepbind ok\n");
    return 0;
}
