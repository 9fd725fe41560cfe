/* exec_from_thread.c - a thread calls execv(argv[1]) (alloc_many) while 4 others allocate.
 * Build: cc -g -O0 -pthread -o exec_from_thread exec_from_thread.c
 * main leaks 333 B in before_exec and prints "exec from a thread" (flushed); the kernel ends the
 * other threads at the exec. alloc_many then prints "alloc_many 1" and leaks 444 B in target_leak.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *volatile sink;
static char *target;

__attribute__((noinline)) static void before_exec(void) { sink = malloc(333); }

static void *churn(void *arg) {
    (void)arg;
    for (;;) {
        char *p = malloc(48);
        p[0] = 1;
        free(p);
    }
    return NULL;
}

static void *execer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++)
        free(malloc(32));
    char *args[] = {target, NULL};
    execv(target, args);
    perror("execv");
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    target = argv[1];
    before_exec();
    printf("exec from a thread\n");
    fflush(stdout);
    pthread_t t;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t, NULL, churn, NULL) != 0)
            return 1;
    if (pthread_create(&t, NULL, execer, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 1;
}
