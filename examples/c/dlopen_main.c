/* dlopen_main.c - dlopens a library by path (argv[1]), calls lib_leak, dlcloses it.
 * Build: cc -g -O0 -o dlopen_main dlopen_main.c -ldl   Run: ./dlopen_main /abs/path/libleaky.so
 *
 * Expected `memshim report` (leaks.host): exactly one site whose frames contain lib_leak:
 *   555 B in 1 block, frames lib_leak (module .../libleaky.so, file .../libleaky.c) then main.
 * The library is unloaded before exit (dlclose returns 0, and a second dlopen with
 * RTLD_NOLOAD finds nothing). Exits with status 0 and prints nothing.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/libleaky.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    void (*lib_leak)(void) = (void (*)(void))dlsym(lib, "lib_leak");
    if (!lib_leak) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    lib_leak();
    if (dlclose(lib) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 1;
    }
    if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) != NULL) {
        fprintf(stderr, "libleaky.so is still loaded after dlclose\n");
        return 1;
    }
    return 0;
}
