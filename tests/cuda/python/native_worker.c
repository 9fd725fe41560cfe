/* native_worker.c - a native thread that makes CUDA calls for Python code, as PyTorch's autograd
 * engine does during backward(). alloc_in_thread(n) starts a pthread that runs cuMemAlloc_v2(n) on
 * the stand-in driver (the block is kept) and joins it; many_in_thread(n) makes n allocations and
 * frees of 4 KiB there, for benches/lent_frames.py. The thread never runs Python code, so memshim
 * lends it the main thread's Python frames. Built by the e2e test and benches/run.sh:
 * cc -shared -fPIC native_worker.c -ldl -lpthread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static size_t wanted;
static int count;
static int release_each;
static int failed;

static void *worker(void *arg) {
    (void)arg;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    alloc_fn alloc = h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;
    free_fn release = h ? (free_fn)dlsym(h, "cuMemFree_v2") : NULL;
    failed = !alloc || (release_each && !release);
    for (int i = 0; !failed && i < count; i++) {
        unsigned long long p;
        failed = alloc(&p, wanted) != 0 || (release_each && release(p) != 0);
    }
    return NULL;
}

static int in_thread(size_t size, int n, int release) {
    pthread_t t;
    wanted = size;
    count = n;
    release_each = release;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return -1;
    pthread_join(t, NULL);
    return failed ? -1 : 0;
}

int alloc_in_thread(size_t n) { return in_thread(n, 1, 0); }

int many_in_thread(int n) { return in_thread(4096, n, 1); }
