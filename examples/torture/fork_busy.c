/* fork_busy.c - fork while 8 threads allocate and free; each child allocates and exits.
 * Build: cc -g -O0 -pthread -o fork_busy fork_busy.c
 * 4 children, one after another while the threads run; each child makes 20000 malloc/free pairs,
 * leaks 321 B in child_leak and exits 0 (exit, so its own atexit work runs). main leaks 123 B in
 * parent_leak after joining the threads.
 * Prints "children 4 ok 4".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink;
static volatile int stop;

__attribute__((noinline)) static void child_leak(void) { sink = malloc(321); }
__attribute__((noinline)) static void parent_leak(void) { sink = malloc(123); }

static void *churn(void *arg) {
    (void)arg;
    while (!stop) {
        char *p = malloc(48);
        p[0] = 1;
        free(p);
    }
    return NULL;
}

int main(void) {
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, churn, NULL) != 0)
            return 1;
    int ok = 0;
    for (int c = 0; c < 4; c++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            for (int i = 0; i < 20000; i++) {
                char *p = malloc(32 + i % 100);
                p[0] = 1;
                free(p);
            }
            child_leak();
            exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    stop = 1;
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    parent_leak();
    printf("children 4 ok %d\n", ok);
    return 0;
}
