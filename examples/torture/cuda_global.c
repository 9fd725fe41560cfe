/* cuda_global.c - reaches libcuda_global.c's driver (dlopen "libcuda.so.1", LD_LIBRARY_PATH) through
 * cuGetProcAddress_v2, as nvcc's static runtime does, and allocates device memory.
 * Build: cc -g -O0 -o cuda_global cuda_global.c -ldl
 * leak_device allocates 3 x 1 MiB and frees none: 3145728 B in 3 blocks of device memory leaked;
 * alloc_and_free allocates 4096 B and frees it. Prints every call's result: "init 0", "alloc 0 0 0",
 * "pair 0 0" and "done".
 */
#include <dlfcn.h>
#include <stdio.h>

typedef unsigned long long CUdeviceptr;
typedef int (*proc_t)(const char *, void **, int, unsigned long long, int *);
typedef int (*init_t)(unsigned);
typedef int (*alloc_t)(CUdeviceptr *, size_t);
typedef int (*free_t)(CUdeviceptr);

static alloc_t mem_alloc;
static free_t mem_free;

__attribute__((noinline)) static void leak_device(void) {
    int r[3];
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        r[i] = mem_alloc(&p, 1u << 20);
    }
    printf("alloc %d %d %d\n", r[0], r[1], r[2]);
}

__attribute__((noinline)) static void alloc_and_free(void) {
    CUdeviceptr p = 0;
    int a = mem_alloc(&p, 4096);
    int f = mem_free(p);
    printf("pair %d %d\n", a, f);
}

int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    proc_t proc = (proc_t)dlsym(h, "cuGetProcAddress_v2");
    if (!proc)
        return 1;
    void *f = NULL;
    int st = 0;
    if (proc("cuInit", &f, 12000, 0, &st) != 0)
        return 1;
    printf("init %d\n", ((init_t)f)(0));
    if (proc("cuMemAlloc", (void **)&mem_alloc, 12000, 0, &st) != 0 ||
        proc("cuMemFree", (void **)&mem_free, 12000, 0, &st) != 0)
        return 1;
    leak_device();
    alloc_and_free();
    printf("done\n");
    return 0;
}
