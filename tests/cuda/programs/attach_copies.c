/* attach_copies.c - a running CUDA program for `memshim attach`: it fetches every driver entry point
 * through cuGetProcAddress at start (as the CUDA runtime does), long before anything attaches, and
 * calls the driver only through those pointers.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/attach_copies, in a directory of its own.
 *
 * At start: cuInit, the primary context, and 3 MiB of device memory (early) kept. With HOLD_CUPTI=1
 * it also subscribes to CUPTI itself first (dlopen "libcupti.so", cuptiSubscribe with a callback
 * that does nothing), as a profiler running in the process would. Prints "attach_copies: ready",
 * then waits for a file named `go` in its working directory, and then, once:
 *   keep_device     2 x cuMemAlloc(1 MiB + 100), kept          2 blocks, 2097352 B never freed
 *   scratch_device  cuMemAlloc(512 KiB), cuMemFree               allocated and freed
 *   upload          4 x cuMemcpyHtoD of 256 KiB from malloc'd (pageable) memory    HtoD 1048576 B
 *   download        1 x cuMemcpyDtoH of 64 KiB into malloc'd memory                DtoH   65536 B
 *   drop_early      cuMemFree of the 3 MiB allocated at start (before any attach)
 * prints "attach_copies: done", waits for a file named `stop` (made after detach), makes one more
 * cuMemAlloc and cuMemFree, prints "attach_copies: N callbacks after detach" with the CUPTI callbacks
 * the stand-in libcupti made during them (0 once nothing is subscribed to them, or when no CUPTI is
 * loaded), frees its host buffers and exits 0.
 *
 * Attached before `go` and detached after "done", with CUPTI's callbacks: exactly those device
 * allocations and copies, 3145728 B in use on the device at attach, and the free of the early block
 * not subtracted from anything.
 */
#include "cuda_min.h"
#include <string.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

static CUdeviceptr kept[2], early;

static void wait_for(const char *name) {
    while (access(name, F_OK) != 0) usleep(10000);
}

__attribute__((noinline)) static void keep_device(void) {
    for (int i = 0; i < 2; i++) CK(cu.cuMemAlloc(&kept[i], MiB + 100));
}

__attribute__((noinline)) static void scratch_device(void) {
    CUdeviceptr d;
    CK(cu.cuMemAlloc(&d, 512 * KiB));
    CK(cu.cuMemFree(d));
}

__attribute__((noinline)) static void upload(const unsigned char *host) {
    for (unsigned i = 0; i < 4; i++) CK(cu.cuMemcpyHtoD(kept[0] + i * 256 * KiB, host + i * 256 * KiB, 256 * KiB));
}

__attribute__((noinline)) static void download(unsigned char *host) { CK(cu.cuMemcpyDtoH(host, kept[0], 64 * KiB)); }

__attribute__((noinline)) static void drop_early(void) { CK(cu.cuMemFree(early)); }

typedef void (*cupti_callback)(void *, int, unsigned, const void *);
static void ignore(void *u, int domain, unsigned id, const void *data) { (void)u, (void)domain, (void)id, (void)data; }

/* Subscribes to CUPTI as another tool would, and stays subscribed. */
static void hold_cupti(void) {
    void *lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen(libcupti.so): %s\n", dlerror()); exit(1); }
    int (*subscribe)(void **, cupti_callback, void *) = (int (*)(void **, cupti_callback, void *))dlsym(lib, "cuptiSubscribe");
    void *handle = 0;
    EXPECT(subscribe && subscribe(&handle, ignore, 0) == 0);
}

/* The callbacks the stand-in libcupti (if one is loaded) makes during one cuMemAlloc and cuMemFree. */
static unsigned long long callbacks_around_one_alloc(void) {
    void *lib = dlopen("libcupti.so", RTLD_NOW | RTLD_NOLOAD);
    unsigned long long (*count)(void) = lib ? (unsigned long long (*)(void))dlsym(lib, "standin_cupti_callbacks") : 0;
    unsigned long long before = count ? count() : 0;
    CUdeviceptr d;
    CK(cu.cuMemAlloc(&d, 4096));
    CK(cu.cuMemFree(d));
    return count ? count() - before : 0;
}

int main(void) {
    cuda_min_init();
    CK(cu.cuMemAlloc(&early, 3 * MiB));
    const char *hold = getenv("HOLD_CUPTI");
    if (hold && !strcmp(hold, "1")) hold_cupti();
    unsigned char *host = malloc(MiB), *back = malloc(64 * KiB);
    EXPECT(host && back);
    for (unsigned i = 0; i < MiB; i++) host[i] = (unsigned char)(i * 7 + 1);
    printf("attach_copies: ready\n");
    fflush(stdout);
    wait_for("go");
    keep_device();
    scratch_device();
    upload(host);
    download(back);
    EXPECT(!memcmp(back, host, 64 * KiB));
    drop_early();
    printf("attach_copies: done\n");
    fflush(stdout);
    wait_for("stop");
    printf("attach_copies: %llu callbacks after detach\n", callbacks_around_one_alloc());
    free(host);
    free(back);
    return 0;
}
