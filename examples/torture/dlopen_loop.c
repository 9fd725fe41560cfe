/* dlopen_loop.c - dlopen, call, dlclose the library argv[1] (libtorture_dl.so) 200 times.
 * Build: cc -g -O0 -o dlopen_loop dlopen_loop.c -ldl
 * Each round leaks 10 B in the library's dl_leak: 200 blocks, 2000 B. Prints "rounds 200".
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    int n = 0;
    for (int i = 0; i < 200; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        void (*work)(void) = (void (*)(void))dlsym(h, "dl_work");
        if (!work)
            return 1;
        work();
        dlclose(h);
        n++;
    }
    printf("rounds %d\n", n);
    return 0;
}
