/* numa_calls.c: NUMA placement and CPU affinity calls with known arguments (build with -lnuma).
 * Expected report, numa.calls in this order (node 0 and CPU 0 exist on every machine):
 *   mbind             MPOL_BIND       nodes [0]   bytes 2097152   result 0   in bind_buffer
 *   set_mempolicy     MPOL_PREFERRED  nodes [0]                   result 0   in prefer_node0
 *   set_mempolicy     MPOL_DEFAULT    nodes []                    result 0   in prefer_node0
 *   sched_setaffinity                 cpus [0]    target 0        result 0   in pin_process
 *   pthread_setaffinity_np            cpus [0]    target 0        result 0   in pin_thread
 *   mbind             MPOL_BIND       nodes [0]   bytes 1048576   result 0   in numa_alloc_onnode
 *                                                                            <- alloc_on_node0
 *   move_pages                        nodes [0]   bytes 1 (page)  result 0   in move_first_page
 * (a move_pages query, with no target nodes, is not a placement call and is not listed).
 * numa_alloc_onnode's 1 MiB mapping is freed with numa_free; the 2 MiB mapping is unmapped.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static char *buf;

__attribute__((noinline)) static long bind_buffer(void) {
    unsigned long mask = 1; /* node 0 */
    buf = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return mbind(buf, 2 << 20, MPOL_BIND, &mask, 64, 0);
}

__attribute__((noinline)) static long prefer_node0(void) {
    unsigned long mask = 1;
    long a = set_mempolicy(MPOL_PREFERRED, &mask, 64);
    long b = set_mempolicy(MPOL_DEFAULT, NULL, 0);
    return a | b;
}

__attribute__((noinline)) static int pin_process(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

__attribute__((noinline)) static int pin_thread(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

__attribute__((noinline)) static int alloc_on_node0(void) {
    char *p = numa_alloc_onnode(1 << 20, 0);
    if (!p) return 1;
    memset(p, 1, 1 << 20);
    numa_free(p, 1 << 20);
    return 0;
}

__attribute__((noinline)) static long move_first_page(void) {
    void *pages[1] = {buf};
    int node = 0, status = -1;
    buf[0] = 1;
    long q = move_pages(0, 1, pages, NULL, &status, 0); /* a query: not recorded */
    long m = move_pages(0, 1, pages, &node, &status, MPOL_MF_MOVE);
    return q | m;
}

int main(void) {
    if (numa_available() < 0) {
        puts("no NUMA support");
        return 2;
    }
    long r = bind_buffer() | prefer_node0() | pin_process() | pin_thread() | alloc_on_node0() | move_first_page();
    munmap(buf, 2 << 20);
    printf("numa calls: %s\n", r == 0 ? "ok" : "failed");
    return r != 0;
}
