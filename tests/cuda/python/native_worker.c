/* native_worker.c - a native thread that makes a CUDA call for Python code, as PyTorch's autograd
 * engine does during backward(): alloc_in_thread(n) starts a pthread that runs cuMemAlloc_v2(n) on the
 * stand-in driver and joins it. The thread never runs Python code, so memshim lends it the main
 * thread's Python frames. many_in_thread(n) does the same with n allocations and frees of 4 KiB, for
 * benches/lent_frames.py. Built by the e2e test and benches/run.sh:
 * cc -shared -fPIC native_worker.c -ldl -lpthread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static size_t wanted;
static int result = -1;

static void *worker(void *arg) {
    (void)arg;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    alloc_fn f = h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;
    unsigned long long p;
    result = f ? f(&p, wanted) : -1;
    return NULL;
}

int alloc_in_thread(size_t n) {
    pthread_t t;
    wanted = n;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return -1;
    pthread_join(t, NULL);
    return result;
}

static int count;
static int failed;

static void *many(void *arg) {
    (void)arg;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    alloc_fn alloc = h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;
    free_fn release = h ? (free_fn)dlsym(h, "cuMemFree_v2") : NULL;
    failed = !alloc || !release;
    for (int i = 0; !failed && i < count; i++) {
        unsigned long long p;
        failed = alloc(&p, 4096) != 0 || release(p) != 0;
    }
    return NULL;
}

int many_in_thread(int n) {
    pthread_t t;
    count = n;
    if (pthread_create(&t, NULL, many, NULL) != 0)
        return -1;
    pthread_join(t, NULL);
    return failed ? -1 : 0;
}
