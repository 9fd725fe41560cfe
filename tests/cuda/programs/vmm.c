/* vmm.c - the virtual memory management API: reserve, create, map, unmap, release.
 * Build: tests/cuda/build.sh OUT. Run: LD_LIBRARY_PATH=OUT OUT/vmm
 *
 * Expected memshim report, device memory, sites from this file's functions, exactly:
 *   leak_vmm          2097152 B in 1 block  (cuMemCreate of a 2 MiB handle, mapped at va + 2 MiB by
 *                                           cuMemMap in the same function, never unmapped/released)
 *   create_transient  no leak               (cuMemCreate 2 MiB, mapped at va in main, then
 *                                           release_transient: cuMemUnmap(va, 2 MiB), cuMemRelease)
 *   reserve_va        67108864 B of address space (cuMemAddressReserve 64 MiB, never freed: a
 *                     reservation, not memory; counts as a device leak only if reservations are
 *                     reported)
 * Physical (cuMemCreate) bytes: 2 handles, 4194304 B created, peak 4194304 B, 2097152 B at exit.
 * Prints "granularity 2097152", "live 2097152 of 85899345920" (stand-in default capacity) and "done".
 */
#include "cuda_min.h"
#include <string.h>

#define MiB (1024u * 1024u)

static CUmemAllocationProp prop;
static CUdeviceptr va;

__attribute__((noinline)) void reserve_va(void) { CK(cu.cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0)); }

static void allow_access(CUdeviceptr p, size_t n) {
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = 0;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cu.cuMemSetAccess(p, n, &desc, 1));
}

__attribute__((noinline)) CUmemGenericAllocationHandle create_transient(void) {
    CUmemGenericAllocationHandle h;
    CK(cu.cuMemCreate(&h, 2 * MiB, &prop, 0));
    return h;
}

__attribute__((noinline)) void leak_vmm(void) {
    CUmemGenericAllocationHandle h;
    CK(cu.cuMemCreate(&h, 2 * MiB, &prop, 0));
    CK(cu.cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0));
    allow_access(va + 2 * MiB, 2 * MiB);
}

__attribute__((noinline)) void release_transient(CUmemGenericAllocationHandle h) {
    CK(cu.cuMemUnmap(va, 2 * MiB));
    CK(cu.cuMemRelease(h));
}

int main(void) {
    static unsigned char in[4 * MiB], out[4 * MiB];
    size_t gran = 0, free_b, total;
    cuda_min_init();
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CK(cu.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    printf("granularity %zu\n", gran);
    EXPECT(gran == 2 * MiB);

    reserve_va();
    CUmemGenericAllocationHandle first = create_transient();
    CK(cu.cuMemMap(va, 2 * MiB, 0, first, 0));
    allow_access(va, 2 * MiB);
    leak_vmm();

    /* Both mappings are usable as one 4 MiB range. */
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i >> 12);
    CK(cu.cuMemcpyHtoD(va, in, sizeof in));
    CK(cu.cuMemcpyDtoH(out, va, sizeof out));
    EXPECT(memcmp(in, out, sizeof in) == 0);

    release_transient(first);
    CK(cu.cuMemGetInfo(&free_b, &total));
    printf("live %zu of %zu\n", total - free_b, total);
    printf("done\n");
    return 0;
}
