/* dlopen_busy.c - allocates steadily, then dlopens a library (argv[1], libslowinit.so) whose
 * constructor computes for 200 ms without allocating and then makes 300000 allocations, all while
 * dlopen holds the loader's lock.
 * Build: cc -g -O0 -o dlopen_busy dlopen_busy.c -ldl   Run: ./dlopen_busy /abs/path/libslowinit.so
 *
 * Under memshim with full stacks this once deadlocked: the writer, quiet during the constructor's
 * computation, parked on the channel, which registers a thread-local destructor under the loader's
 * lock; the constructor's allocations then filled the channel. Expected: prints "ready 1", exits 0,
 * and the report counts at least 500000 allocations, none of them leaked by slow_init.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/libslowinit.so\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < 200000; i++) {
        free(malloc(48));
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*ready)(void) = (int (*)(void))dlsym(lib, "lib_ready");
    if (!ready) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    printf("ready %d\n", ready());
    return 0;
}
