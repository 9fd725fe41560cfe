/* late_thread.c - alone for 300 ms, then one thread. Build: cc -g -O0 -pthread -o late_thread late_thread.c
 * Alone, it allocates and frees 20 rounds of 1000 blocks 15 ms apart and leaks 1000 blocks of 100 B
 * from alone_leak; then it writes how many threads the process has into the file named by its
 * argument; then one thread leaks 500 blocks of 200 B from thread_leak. Prints "done".
 * A profiler whose helper threads wait until the process has a second thread of its own leaves
 * the count at 1.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile keep[1500];

__attribute__((noinline)) static void alone_leak(int i) {
    keep[i] = malloc(100);
    memset(keep[i], 1, 100);
}

__attribute__((noinline)) static void *thread_leak(void *arg) {
    for (int i = 0; i < 500; i++) {
        keep[1000 + i] = malloc(200);
        memset(keep[1000 + i], 2, 200);
    }
    return arg;
}

static int tasks(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    for (int round = 0; round < 20; round++) {
        void *tmp[1000];
        for (int i = 0; i < 1000; i++) tmp[i] = malloc(64 + i);
        for (int i = 0; i < 1000; i++) free(tmp[i]);
        alone_leak(round * 50);
        for (int i = 1; i < 50; i++) alone_leak(round * 50 + i);
        struct timespec ts = {0, 15 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (f) {
            fprintf(f, "tasks %d\n", tasks());
            fclose(f);
        }
    }
    pthread_t t;
    if (pthread_create(&t, NULL, thread_leak, NULL) != 0) return 1;
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
