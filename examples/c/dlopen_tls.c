/* dlopen_tls.c: dlopens every library named on the command line (each with its own TLS, like the
 * CUDA libraries PyTorch loads), touching their TLS from two threads. Loading TLS modules makes glibc
 * grow each thread's DTV with malloc inside __tls_get_addr; a shim whose reentrancy guard itself
 * lived in dynamic TLS recursed there until the stack overflowed.
 *
 * Expected: prints "loaded N" and exits 0 under memshim; one host leak site `leak_after_load`
 * (1000 B, 1 block).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *handles[64];
static int nhandles;
static pthread_barrier_t loaded;

/* Started before the libraries are loaded and run after: its DTV is the one glibc must grow. */
static void *waiting_worker(void *arg) {
    (void)arg;
    free(malloc(16));
    pthread_barrier_wait(&loaded);
    free(malloc(16));
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    int sum = 0;
    for (int i = 0; i < nhandles; i++) {
        int (*touch)(void) = (int (*)(void))dlsym(handles[i], "tls_touch");
        sum += touch();
        free(malloc(32));
    }
    return (void *)(long)sum;
}

__attribute__((noinline)) void *leak_after_load(void) {
    void *p = malloc(1000);
    memset(p, 2, 1000);
    return p;
}

int main(int argc, char **argv) {
    pthread_t t, early;
    pthread_barrier_init(&loaded, NULL, 2);
    pthread_create(&early, NULL, waiting_worker, NULL);
    for (int i = 1; i < argc && nhandles < 64; i++) {
        handles[nhandles] = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[nhandles]) {
            fprintf(stderr, "dlopen %s: %s\n", argv[i], dlerror());
            return 1;
        }
        nhandles++;
    }
    pthread_barrier_wait(&loaded);
    pthread_join(early, NULL);
    worker(NULL);
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    static void *kept;
    kept = leak_after_load();
    printf("loaded %d\n", nhandles);
    return kept == NULL;
}
