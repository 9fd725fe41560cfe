/* numa_cross_node.c: a buffer that lives on another NUMA node than the thread that allocates and uses
 * it, beside one that lives where it should (build with -lnuma -pthread).
 *
 * A worker thread is bound (pthread_setaffinity_np) to the CPUs of the highest node: node 1 of a
 * two-node machine. It allocates, with malloc:
 *   - 64 MiB (67108864 bytes) in alloc_batch_buffer, whose pages mbind(MPOL_BIND, node 0) places on
 *     node 0 before they are first touched: misplaced, every access crosses the interconnect;
 *   - 16 MiB (16777216 bytes) in alloc_local_buffer, with the default policy: on the thread's own node.
 * It works on both for 500 ms (the shim samples a large block's pages once it is 100 ms old, on a
 * 100 ms tick), then frees them.
 *
 * Expected numa.placements on two nodes, each CPU its own node (scripts/qemu/numa2.sh):
 *   67108864  heap  node 0  alloc_cpu 1  alloc_node 1  remote true   in alloc_batch_buffer
 *   16777216  heap  node 1  alloc_cpu 1  alloc_node 1  remote false  in alloc_local_buffer
 * and a remote_memory finding naming alloc_batch_buffer. On one node the worker runs on node 0 and
 * both buffers are there: neither is remote. Prints "numa cross node: ok" and exits 0.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH_BYTES (64UL << 20)
#define LOCAL_BYTES (16UL << 20)
#define WORK_NS 500000000LL

struct job {
    int node;       /* the node the worker runs on */
    int data_node;  /* the node the batch buffer is forced onto */
    int status;     /* 0 when everything went as planned */
    int cpu;        /* where the worker ran while allocating */
};

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Binds the calling thread to the CPUs of `node`. */
static int run_on_node(int node) {
    struct bitmask *cpus = numa_allocate_cpumask();
    if (numa_node_to_cpus(node, cpus) != 0) {
        numa_free_cpumask(cpus);
        return -1;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned i = 0; i < cpus->size && i < CPU_SETSIZE; i++)
        if (numa_bitmask_isbitset(cpus, i)) CPU_SET(i, &set);
    numa_free_cpumask(cpus);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The misplaced buffer: its whole pages are bound to `node` before anything touches them, so the
 * first touch below puts them there whatever CPU touches them. */
__attribute__((noinline)) static char *alloc_batch_buffer(int node) {
    char *p = malloc(BATCH_BYTES);
    if (!p) return NULL;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + BATCH_BYTES) & ~(uintptr_t)(page - 1);
    unsigned long mask = 1UL << node;
    /* MPOL_MF_MOVE also moves the page malloc's header already touched. */
    if (mbind((void *)start, end - start, MPOL_BIND, &mask, sizeof mask * 8, MPOL_MF_MOVE) != 0) {
        perror("mbind");
        free(p);
        return NULL;
    }
    memset(p, 1, BATCH_BYTES);
    return p;
}

/* The well-placed buffer: default policy, so first touch puts it on the worker's own node. */
__attribute__((noinline)) static char *alloc_local_buffer(void) {
    char *p = malloc(LOCAL_BYTES);
    if (p) memset(p, 2, LOCAL_BYTES);
    return p;
}

/* Reads and writes both buffers a cache line at a time until WORK_NS have passed. */
static unsigned long work(char *batch, char *local, long long until) {
    unsigned long sum = 0;
    while (now_ns() < until) {
        for (size_t i = 0; i < BATCH_BYTES; i += 64) {
            sum += (unsigned char)batch[i];
            batch[i] = (char)sum;
        }
        for (size_t i = 0; i < LOCAL_BYTES; i += 64) sum += (unsigned char)local[i];
    }
    return sum;
}

static void *worker(void *arg) {
    struct job *job = arg;
    job->status = 1;
    if (run_on_node(job->node) != 0) {
        fprintf(stderr, "cannot run on node %d\n", job->node);
        return NULL;
    }
    job->cpu = sched_getcpu();
    char *batch = alloc_batch_buffer(job->data_node);
    char *local = alloc_local_buffer();
    if (!batch || !local) {
        fprintf(stderr, "allocation failed\n");
        free(batch);
        free(local);
        return NULL;
    }
    unsigned long sum = work(batch, local, now_ns() + WORK_NS);
    /* Ask the kernel where the first page of each buffer ended up, for the program's own line. */
    long page = sysconf(_SC_PAGESIZE);
    void *pages[2] = {
        (void *)(((uintptr_t)batch + page) & ~(uintptr_t)(page - 1)),
        (void *)(((uintptr_t)local + page) & ~(uintptr_t)(page - 1)),
    };
    int where[2] = {-1, -1};
    move_pages(0, 2, pages, NULL, where, 0);
    printf("worker on node %d (cpu %d): batch buffer on node %d, local buffer on node %d (%lu)\n",
           job->node, job->cpu, where[0], where[1], sum & 1);
    free(batch);
    free(local);
    job->status = (where[0] == job->data_node && where[1] == job->node) ? 0 : 2;
    return NULL;
}

int main(void) {
    if (numa_available() < 0) {
        /* A kernel without NUMA support: nothing to show, nothing wrong. */
        printf("numa cross node: ok (no NUMA support)\n");
        return 0;
    }
    struct job job = {.node = numa_max_node(), .data_node = 0};
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &job) != 0) return 1;
    pthread_join(t, NULL);
    if (job.status != 0) {
        fprintf(stderr, "numa cross node: placement not as planned (status %d)\n", job.status);
        return 1;
    }
    printf("numa cross node: ok\n");
    return 0;
}
