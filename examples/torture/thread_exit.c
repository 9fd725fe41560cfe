/* thread_exit.c - _exit(3) from a thread while 4 others allocate.
 * Build: cc -g -O0 -pthread -o thread_exit thread_exit.c
 * main leaks 999 B in before_exit and prints "before exit" (flushed); then a thread calls _exit(3)
 * after its own 20000 malloc/free pairs. No atexit handler or destructor runs. Exit status 3.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *volatile sink;

__attribute__((noinline)) static void before_exit(void) { sink = malloc(999); }

static void *churn(void *arg) {
    (void)arg;
    for (;;) {
        char *p = malloc(48);
        p[0] = 1;
        free(p);
    }
    return NULL;
}

static void *quitter(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        char *p = malloc(32);
        p[0] = 1;
        free(p);
    }
    _exit(3);
}

int main(void) {
    before_exit();
    printf("before exit\n");
    fflush(stdout);
    pthread_t t;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t, NULL, churn, NULL) != 0)
            return 1;
    if (pthread_create(&t, NULL, quitter, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 0;
}
