/* native_worker.c - a native thread that makes a CUDA call for Python code, as PyTorch's autograd
 * engine does during backward(): alloc_in_thread(n) starts a pthread that runs cuMemAlloc_v2(n) on the
 * stand-in driver and joins it. The thread never runs Python code, so memshim lends it the main
 * thread's Python frames. Built by the e2e test: cc -shared -fPIC native_worker.c -ldl -lpthread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*alloc_fn)(unsigned long long *, size_t);

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
