/* standin_cupti_calls.h - CUPTI's driver-API callbacks around the stand-in's memory calls and copies
 * (included once by libcuda_standin.c, after standin_functions.h).
 *
 * The stand-in libcupti (libcupti_standin.c) hands the driver its dispatch function through
 * standin_set_cupti_hook() when a tool subscribes, as the real CUPTI registers with the real driver.
 * Then every call below calls the hook at its entry and at its exit (with its result), with the
 * call's arguments in one struct, in order, as CUPTI's <name>_params are laid out, its callback id
 * from CUPTI's cupti_driver_cbid.h, and one correlation word the two callbacks of a call share.
 * Whichever way a program reached the function (by symbol, dlsym or cuGetProcAddress, before or
 * after a tool subscribed), the callbacks come: they are inside the function, as in the real driver.
 *
 * Each i_NAME here calls the b_NAME of standin_functions.h.
 */
typedef void (*cupti_hook_t)(int exit, unsigned id, const char *name, const void *params,
                             unsigned long long *correlation, const CUresult *result);
static cupti_hook_t g_cupti_hook;
void standin_set_cupti_hook(cupti_hook_t hook) { __atomic_store_n(&g_cupti_hook, hook, __ATOMIC_RELEASE); }

/* The call `expr` of driver function `name` (callback id `id`), with its parameter struct prm_. */
#define CALLBACKS(id, name, expr)                                                                    \
    ({                                                                                               \
        cupti_hook_t h_ = __atomic_load_n(&g_cupti_hook, __ATOMIC_ACQUIRE);                           \
        unsigned long long corr_ = 0;                                                                \
        if (h_) h_(0, id, #name, &prm_, &corr_, 0);                                                  \
        CUresult r_ = (expr);                                                                        \
        if (h_) h_(1, id, #name, &prm_, &corr_, &r_);                                                \
        r_;                                                                                          \
    })
#define T1(name, id, A, a)                                                                           \
    static CUresult i_##name(A a) {                                                                  \
        struct { A a; } prm_ = {a};                                                                  \
        return CALLBACKS(id, name, b_##name(a));                                                     \
    }
#define T2(name, id, A, a, B, b)                                                                     \
    static CUresult i_##name(A a, B b) {                                                             \
        struct { A a; B b; } prm_ = {a, b};                                                          \
        return CALLBACKS(id, name, b_##name(a, b));                                                  \
    }
#define T3(name, id, A, a, B, b, C, c)                                                               \
    static CUresult i_##name(A a, B b, C c) {                                                        \
        struct { A a; B b; C c; } prm_ = {a, b, c};                                                  \
        return CALLBACKS(id, name, b_##name(a, b, c));                                               \
    }
#define T4(name, id, A, a, B, b, C, c, D, d)                                                         \
    static CUresult i_##name(A a, B b, C c, D d) {                                                   \
        struct { A a; B b; C c; D d; } prm_ = {a, b, c, d};                                          \
        return CALLBACKS(id, name, b_##name(a, b, c, d));                                            \
    }
#define T5(name, id, A, a, B, b, C, c, D, d, E, e)                                                   \
    static CUresult i_##name(A a, B b, C c, D d, E e) {                                              \
        struct { A a; B b; C c; D d; E e; } prm_ = {a, b, c, d, e};                                  \
        return CALLBACKS(id, name, b_##name(a, b, c, d, e));                                         \
    }
#define T6(name, id, A, a, B, b, C, c, D, d, E, e, F, f)                                             \
    static CUresult i_##name(A a, B b, C c, D d, E e, F f) {                                         \
        struct { A a; B b; C c; D d; E e; F f; } prm_ = {a, b, c, d, e, f};                          \
        return CALLBACKS(id, name, b_##name(a, b, c, d, e, f));                                      \
    }

typedef CUdeviceptr DP;
typedef CUmemGenericAllocationHandle MH;
typedef unsigned long long ULL;

/* allocation and release */
T2(cuMemAlloc_v2, 243, DP *, p, size_t, n)
T5(cuMemAllocPitch_v2, 244, DP *, p, size_t *, pitch, size_t, w, size_t, h, unsigned, elem)
T3(cuMemAllocManaged, 371, DP *, p, size_t, n, unsigned, flags)
T3(cuMemAllocAsync, 598, DP *, p, size_t, n, CUstream, s)
T3(cuMemAllocAsync_ptsz, 599, DP *, p, size_t, n, CUstream, s)
T4(cuMemAllocFromPoolAsync, 611, DP *, p, size_t, n, CUmemoryPool, pool, CUstream, s)
T4(cuMemAllocFromPoolAsync_ptsz, 612, DP *, p, size_t, n, CUmemoryPool, pool, CUstream, s)
T1(cuMemFree_v2, 245, DP, p)
T2(cuMemFreeAsync, 600, DP, p, CUstream, s)
T2(cuMemFreeAsync_ptsz, 601, DP, p, CUstream, s)
T3(cuMemHostAlloc, 39, void **, p, size_t, n, unsigned, flags)
T2(cuMemAllocHost_v2, 294, void **, p, size_t, n)
T1(cuMemFreeHost, 38, void *, p)
T3(cuMemHostRegister_v2, 379, void *, p, size_t, n, unsigned, flags)
T1(cuMemHostUnregister, 302, void *, p)
T2(cuMemGetInfo_v2, 242, size_t *, free_b, size_t *, total)
T5(cuMemAddressReserve, 547, DP *, p, size_t, n, size_t, align, DP, hint, ULL, flags)
T2(cuMemAddressFree, 548, DP, p, size_t, n)
T4(cuMemCreate, 549, MH *, h, size_t, n, const CUmemAllocationProp *, prop, ULL, flags)
T1(cuMemRelease, 550, MH, h)
T5(cuMemMap, 551, DP, p, size_t, n, size_t, offset, MH, h, ULL, flags)
T2(cuMemUnmap, 552, DP, p, size_t, n)

/* copies */
T3(cuMemcpy, 305, DP, d, DP, s, size_t, n)
T3(cuMemcpy_ptds, 408, DP, d, DP, s, size_t, n)
T4(cuMemcpyAsync, 306, DP, d, DP, s, size_t, n, CUstream, st)
T4(cuMemcpyAsync_ptsz, 418, DP, d, DP, s, size_t, n, CUstream, st)
T3(cuMemcpyHtoD_v2, 276, DP, d, const void *, s, size_t, n)
T3(cuMemcpyHtoD_v2_ptds, 397, DP, d, const void *, s, size_t, n)
T3(cuMemcpyDtoH_v2, 278, void *, d, DP, s, size_t, n)
T3(cuMemcpyDtoH_v2_ptds, 398, void *, d, DP, s, size_t, n)
T3(cuMemcpyDtoD_v2, 280, DP, d, DP, s, size_t, n)
T3(cuMemcpyDtoD_v2_ptds, 399, DP, d, DP, s, size_t, n)
T4(cuMemcpyHtoDAsync_v2, 277, DP, d, const void *, s, size_t, n, CUstream, st)
T4(cuMemcpyHtoDAsync_v2_ptsz, 421, DP, d, const void *, s, size_t, n, CUstream, st)
T4(cuMemcpyDtoHAsync_v2, 279, void *, d, DP, s, size_t, n, CUstream, st)
T4(cuMemcpyDtoHAsync_v2_ptsz, 422, void *, d, DP, s, size_t, n, CUstream, st)
T4(cuMemcpyDtoDAsync_v2, 281, DP, d, DP, s, size_t, n, CUstream, st)
T4(cuMemcpyDtoDAsync_v2_ptsz, 423, DP, d, DP, s, size_t, n, CUstream, st)
T5(cuMemcpyPeer, 318, DP, d, CUcontext, dc, DP, s, CUcontext, sc, size_t, n)
T5(cuMemcpyPeer_ptds, 409, DP, d, CUcontext, dc, DP, s, CUcontext, sc, size_t, n)
T6(cuMemcpyPeerAsync, 319, DP, d, CUcontext, dc, DP, s, CUcontext, sc, size_t, n, CUstream, st)
T6(cuMemcpyPeerAsync_ptsz, 426, DP, d, CUcontext, dc, DP, s, CUcontext, sc, size_t, n, CUstream, st)
T1(cuMemcpy2D_v2, 287, const memcpy2d_t *, c)
T1(cuMemcpy2D_v2_ptds, 405, const memcpy2d_t *, c)
T1(cuMemcpy2DUnaligned_v2, 288, const memcpy2d_t *, c)
T1(cuMemcpy2DUnaligned_v2_ptds, 406, const memcpy2d_t *, c)
T2(cuMemcpy2DAsync_v2, 289, const memcpy2d_t *, c, CUstream, st)
T2(cuMemcpy2DAsync_v2_ptsz, 424, const memcpy2d_t *, c, CUstream, st)
T1(cuMemcpy3D_v2, 290, const memcpy3d_t *, c)
T1(cuMemcpy3D_v2_ptds, 407, const memcpy3d_t *, c)
T2(cuMemcpy3DAsync_v2, 291, const memcpy3d_t *, c, CUstream, st)
T2(cuMemcpy3DAsync_v2_ptsz, 425, const memcpy3d_t *, c, CUstream, st)
