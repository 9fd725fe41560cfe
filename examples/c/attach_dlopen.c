/* attach_dlopen.c - a running program that opens a library after `memshim attach` attached.
 * Build: cc -g -O0 -o attach_dlopen attach_dlopen.c -ldl   Run: ./attach_dlopen /abs/libleaky.so
 *
 * Prints "attach_dlopen: ready", waits until a file named `go` appears in its working directory,
 * then dlopens the library (RTLD_NOW | RTLD_LOCAL), looks up lib_leak and calls it 3 times (each
 * keeps one malloc(555), see libleaky.c), prints "attach_dlopen: called", waits until a file named
 * `stop` appears, prints "attach_dlopen: done" and exits with status 5.
 *
 * Attached before `go` (and detached before `stop`), `memshim report` shows exactly:
 *   leaks.host  lib_leak  1665 B in 3 blocks (frame 0 lib_leak in libleaky.c, then main)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static void wait_for(const char *file) {
    while (access(file, F_OK) != 0)
        usleep(20000);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/libleaky.so\n", argv[0]);
        return 2;
    }
    printf("attach_dlopen: ready\n");
    fflush(stdout);
    wait_for("go");
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
    for (int i = 0; i < 3; i++)
        lib_leak();
    printf("attach_dlopen: called\n");
    fflush(stdout);
    wait_for("stop");
    printf("attach_dlopen: done\n");
    return 5;
}
