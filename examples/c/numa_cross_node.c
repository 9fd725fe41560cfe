/* numa_cross_node.c: buffers that live on another NUMA node than the thread that allocates and uses
 * them, for two different reasons, beside one that lives where it should, and a thread that moves
 * between nodes (build with -lnuma -pthread).
 *
 * A worker thread is bound (pthread_setaffinity_np) to the CPUs of the highest node: node 1 of a
 * two-node machine. It allocates, with malloc:
 *   - 64 MiB (67108864 bytes) in alloc_batch_buffer, whose pages mbind(MPOL_BIND, node 0) places on
 *     node 0 before they are first touched: misplaced by a placement call;
 *   - 16 MiB (16777216 bytes) in alloc_local_buffer, with the default policy: on the thread's own node;
 *   - 32 MiB (33554432 bytes) in alloc_shared_buffer, untouched, which a "toucher" thread bound to
 *     node 0 then initialises (memset): first touch puts it on node 0, no placement call involved.
 * It works on all three for 500 ms (the shim samples a large block's pages once it is 100 ms old, on
 * a 100 ms tick), then frees them. Meanwhile a "migrator" thread runs 1 s on node 1's CPUs, moves
 * itself to node 0's with sched_setaffinity and runs 1 s more.
 *
 * Expected numa.placements on two nodes, each CPU its own node (scripts/qemu/numa2.sh):
 *   67108864  heap  node 0  alloc_cpu 1  remote true   cause placement_call  in alloc_batch_buffer
 *   33554432  heap  node 0  alloc_cpu 1  remote true   cause first_touch     in alloc_shared_buffer
 *   16777216  heap  node 1  alloc_cpu 1  remote false                        in alloc_local_buffer
 * with remote_memory, placed_remote and first_touch findings, and numa.threads naming "migrator" with
 * samples on both nodes (a thread_migration finding). On one node every buffer and thread is on
 * node 0: nothing is remote. Prints "numa cross node: ok" and exits 0.
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BATCH_BYTES (64UL << 20)
#define LOCAL_BYTES (16UL << 20)
#define SHARED_BYTES (32UL << 20)
#define WORK_NS 500000000LL
#define MIGRATE_NS 1000000000LL

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
/* The CPUs of `node` as a cpu_set_t; 0 on success. */
static int node_cpus(int node, cpu_set_t *set) {
    struct bitmask *cpus = numa_allocate_cpumask();
    if (numa_node_to_cpus(node, cpus) != 0) {
        numa_free_cpumask(cpus);
        return -1;
    }
    CPU_ZERO(set);
    for (unsigned i = 0; i < cpus->size && i < CPU_SETSIZE; i++)
        if (numa_bitmask_isbitset(cpus, i)) CPU_SET(i, set);
    numa_free_cpumask(cpus);
    return 0;
}

static int run_on_node(int node) {
    cpu_set_t set;
    if (node_cpus(node, &set) != 0) return -1;
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

/* The buffer another thread initialises: allocated here, on the worker's node, but not touched. */
__attribute__((noinline)) static char *alloc_shared_buffer(void) {
    char *p = malloc(SHARED_BYTES);
    if (!p) return NULL;
    /* malloc wrote its header in the first page, and a transparent huge page can bring the whole
     * first 2 MiB in with it on this node: hand back every whole page after the header's, so that
     * the toucher really is the first to write them. */
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page) & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + SHARED_BYTES) & ~(uintptr_t)(page - 1);
    madvise((void *)start, end - start, MADV_DONTNEED);
    return p;
}

struct touch {
    char *buf;
    int node;
};

/* Runs on `node` and writes the whole buffer first: its pages land on `node`. */
static void *toucher(void *arg) {
    struct touch *t = arg;
    if (run_on_node(t->node) != 0) return (void *)1;
    memset(t->buf, 3, SHARED_BYTES);
    return NULL;
}

/* Reads and writes the buffers a cache line at a time until WORK_NS have passed. */
static unsigned long work(char *batch, char *local, char *shared, long long until) {
    unsigned long sum = 0;
    while (now_ns() < until) {
        for (size_t i = 0; i < BATCH_BYTES; i += 64) {
            sum += (unsigned char)batch[i];
            batch[i] = (char)sum;
        }
        for (size_t i = 0; i < LOCAL_BYTES; i += 64) sum += (unsigned char)local[i];
        for (size_t i = 0; i < SHARED_BYTES; i += 64) sum += (unsigned char)shared[i];
    }
    return sum;
}

/* Runs MIGRATE_NS on node `from`'s CPUs, then moves itself to node `to`'s (sched_setaffinity on
 * itself) and runs MIGRATE_NS there: a thread the report must see on both nodes. */
struct migrate {
    int from, to, status;
};

static void *migrator(void *arg) {
    struct migrate *m = arg;
    m->status = 1;
    if (run_on_node(m->from) != 0) return NULL;
    struct timespec pause = {MIGRATE_NS / 1000000000LL, MIGRATE_NS % 1000000000LL};
    nanosleep(&pause, NULL);
    int before = sched_getcpu();
    struct bitmask *cpus = numa_allocate_cpumask();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (numa_node_to_cpus(m->to, cpus) == 0)
        for (unsigned i = 0; i < cpus->size && i < CPU_SETSIZE; i++)
            if (numa_bitmask_isbitset(cpus, i)) CPU_SET(i, &set);
    numa_free_cpumask(cpus);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return NULL;
    nanosleep(&pause, NULL);
    printf("migrator: cpu %d, then cpu %d\n", before, sched_getcpu());
    m->status = 0;
    return NULL;
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
    char *shared = alloc_shared_buffer();
    struct touch touch = {shared, job->data_node};
    pthread_t t;
    void *touched = (void *)1;
    if (shared && pthread_create(&t, NULL, toucher, &touch) == 0) pthread_join(t, &touched);
    if (!batch || !local || touched != NULL) {
        fprintf(stderr, "allocation or first touch failed\n");
        free(batch);
        free(local);
        free(shared);
        return NULL;
    }
    unsigned long sum = work(batch, local, shared, now_ns() + WORK_NS);
    /* Ask the kernel where the first page of each buffer ended up, for the program's own line. */
    long page = sysconf(_SC_PAGESIZE);
    void *pages[3] = {
        (void *)(((uintptr_t)batch + page) & ~(uintptr_t)(page - 1)),
        (void *)(((uintptr_t)local + page) & ~(uintptr_t)(page - 1)),
        (void *)(((uintptr_t)shared + page) & ~(uintptr_t)(page - 1)),
    };
    int where[3] = {-1, -1, -1};
    move_pages(0, 3, pages, NULL, where, 0);
    printf("worker on node %d (cpu %d): batch buffer on node %d, local buffer on node %d, shared "
           "buffer on node %d (%lu)\n",
           job->node, job->cpu, where[0], where[1], where[2], sum & 1);
    free(batch);
    free(local);
    free(shared);
    job->status =
        (where[0] == job->data_node && where[1] == job->node && where[2] == job->data_node) ? 0 : 2;
    return NULL;
}

int main(void) {
    if (numa_available() < 0) {
        /* A kernel without NUMA support: nothing to show, nothing wrong. */
        printf("numa cross node: ok (no NUMA support)\n");
        return 0;
    }
    struct job job = {.node = numa_max_node(), .data_node = 0};
    struct migrate move = {.from = numa_max_node(), .to = 0};
    pthread_t t, m;
    /* The worker is created on its node's CPUs: bound only from inside, it could run (and be
     * sampled) a moment on node 0 first, and read as a thread that migrated. */
    pthread_attr_t on_node;
    cpu_set_t set;
    pthread_attr_init(&on_node);
    if (node_cpus(job.node, &set) == 0) pthread_attr_setaffinity_np(&on_node, sizeof set, &set);
    if (pthread_create(&t, &on_node, worker, &job) != 0) return 1;
    pthread_attr_destroy(&on_node);
    if (pthread_create(&m, NULL, migrator, &move) != 0) return 1;
    pthread_setname_np(m, "migrator");
    pthread_join(t, NULL);
    pthread_join(m, NULL);
    if (job.status != 0 || move.status != 0) {
        fprintf(stderr, "numa cross node: placement not as planned (status %d, %d)\n", job.status,
                move.status);
        return 1;
    }
    printf("numa cross node: ok\n");
    return 0;
}
