/* idle_thread.c: a preloadable library that only starts one thread, which sleeps. Any in-process
 * profiler has at least one helper thread, and glibc's malloc takes its arena locks once a process
 * has two threads, so this is the floor of what loading a profiler costs a malloc-heavy program.
 * Build: cc -shared -fPIC -o idle_thread.so idle_thread.c -lpthread; run: LD_PRELOAD=./idle_thread.so prog
 */
#include <pthread.h>
#include <unistd.h>

static void *sleep_forever(void *arg) {
    for (;;) {
        sleep(100);
    }
    return arg;
}

__attribute__((constructor)) static void start_idle_thread(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, sleep_forever, NULL) == 0) {
        pthread_detach(t);
    }
}
