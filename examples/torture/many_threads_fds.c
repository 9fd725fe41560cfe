/* many_threads_fds.c - 300 threads alive at once, each holding a descriptor of its own, under a
 * descriptor limit of 400: what the shim keeps per thread must not come out of the program's limit.
 * Build: cc -g -O0 -pthread -o many_threads_fds many_threads_fds.c
 * Each thread allocates (1000 malloc/free pairs, then leaks 30 B in thread_leak: 300 blocks, 9000 B),
 * opens /dev/null and waits until all 300 have theirs. Prints "threads 300 opened 300".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define N 300

void *volatile sink;
static pthread_barrier_t barrier;
static int opened;

__attribute__((noinline)) static void thread_leak(void) { sink = malloc(30); }

static void *body(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++)
        free(malloc(16 + i % 200));
    thread_leak();
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0)
        __atomic_add_fetch(&opened, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&barrier);
    if (fd >= 0)
        close(fd);
    return NULL;
}

int main(void) {
    struct rlimit r = {400, 400};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1;
    pthread_barrier_init(&barrier, NULL, N);
    pthread_t t[N];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int made = 0;
    for (int i = 0; i < N; i++)
        if (pthread_create(&t[i], &a, body, NULL) == 0)
            made++;
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    printf("threads %d opened %d\n", made, opened);
    return 0;
}
