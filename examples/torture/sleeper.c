/* sleeper.c - prints its pid, then allocates and sleeps for up to 60 s: the target of the tests that
 * signal `memshim run`. Build: cc -g -O0 -o sleeper sleeper.c
 * Prints "pid N" (flushed) after its first 1000 malloc/free pairs; dies of whatever signal comes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 1000; i++)
        free(malloc(32));
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    for (int i = 0; i < 6000; i++) {
        free(malloc(64));
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
