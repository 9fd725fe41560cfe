// ck.cuh - error checking shared by the CUDA examples: CK(call) prints the failing call with the CUDA
// error's name and number, then exits with status 1.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t ck_e_ = (call);                                                                \
        if (ck_e_ != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%d): %s\n", __FILE__, __LINE__, #call,     \
                         cudaGetErrorName(ck_e_), (int)ck_e_, cudaGetErrorString(ck_e_));          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);               \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Keeps the compiler from turning a function's last call into a jump (which would drop the
// function's own frame from the allocation's stack).
#define KEEP_FRAME() asm volatile("" ::: "memory")
