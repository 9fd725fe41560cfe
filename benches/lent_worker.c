/* lent_worker.c - for benches/lent_frames.py: many_in_thread(n) starts a native thread that makes n
 * device allocations and frees (cuMemAlloc_v2/cuMemFree_v2 of the stand-in driver, tests/cuda) and
 * joins it, as PyTorch's autograd thread allocates gradients while the main thread waits in
 * backward(). The thread runs no Python, so memshim lends it the main thread's frames for each
 * allocation. Built by benches/run.sh: cc -shared -fPIC -O2 lent_worker.c -ldl -lpthread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static int count;
static int failed;

static void *worker(void *arg) {
    (void)arg;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    alloc_fn alloc = h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;
    free_fn release = h ? (free_fn)dlsym(h, "cuMemFree_v2") : NULL;
    if (!alloc || !release) {
        failed = 1;
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        unsigned long long p;
        if (alloc(&p, 4096) != 0 || release(p) != 0)
            failed = 1;
    }
    return NULL;
}

int many_in_thread(int n) {
    pthread_t t;
    count = n;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return -1;
    pthread_join(t, NULL);
    return failed ? -1 : 0;
}
