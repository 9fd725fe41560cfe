/* signal_threads.c - signal handlers that allocate, on 4 threads that allocate: 20000 signals.
 * Build: cc -g -O0 -pthread -o signal_threads signal_threads.c
 * Like sigalrm.c, the handler (SIGUSR1, sent with pthread_kill round robin by main, which blocks it)
 * uses another size class (200 B) than the interrupted thread (64 B), each thread warming its own
 * cache first, so glibc survives it bare. Signals to a thread that has one pending merge; main waits
 * until every worker handled at least one, then stops them.
 * The handler leaks nothing; main leaks 3000 B in signal_main_leak at the end.
 * Prints "signals 20000 every thread handled some".
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink;
static volatile int stop;
static int ready;
static int handled[4];
static __thread int me;

__attribute__((noinline)) static void signal_main_leak(void) { sink = malloc(3000); }

static void on_usr1(int sig) {
    (void)sig;
    char *p = malloc(200);
    p[0] = 1;
    free(p);
    __atomic_add_fetch(&handled[me], 1, __ATOMIC_SEQ_CST);
}

static void *worker(void *arg) {
    me = (int)(long)arg;
    void *warm[4];
    for (int i = 0; i < 4; i++)
        warm[i] = malloc(200);
    for (int i = 0; i < 4; i++)
        free(warm[i]);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    __atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
    while (!stop) {
        char *p = malloc(64);
        p[0] = 1;
        sink = p;
        free(p);
    }
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the workers unblock it */
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 1;
    while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < 4)
        sched_yield();
    int sent = 0;
    for (int i = 0; i < 20000; i++)
        if (pthread_kill(t[i % 4], SIGUSR1) == 0)
            sent++;
    for (int i = 0; i < 4; i++)
        while (__atomic_load_n(&handled[i], __ATOMIC_SEQ_CST) == 0)
            sched_yield();
    stop = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    signal_main_leak();
    printf("signals %d every thread handled some\n", sent);
    return 0;
}
