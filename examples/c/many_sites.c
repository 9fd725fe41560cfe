/* many_sites.c - more leak sites than a page lists: leak_sites calls malloc from 150 places (one
 * macro expanded 150 times, each call its own return address, so its own stack), and the call
 * numbered n (0 to 149) leaks one block of (n + 1) * 16 bytes. Expected `memshim report`
 * (leaks.host): 150 sites in leak_sites, one block each, from 16 B to 2400 B, 181200 B in all; the
 * HTML page lists the largest 100 and says "showing 100 of" the sites; the flame graph merges them
 * into one leak_sites frame of 181200 B in 150 blocks. Prints nothing; exits with status 0.
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept[150];

#define LEAK(n)                                                                                    \
    do {                                                                                           \
        char *p = malloc((size_t)((n) + 1) * 16);                                                  \
        memset(p, 1, (size_t)((n) + 1) * 16);                                                      \
        kept[n] = p;                                                                               \
    } while (0)
#define LEAK10(n)                                                                                  \
    LEAK(n);                                                                                       \
    LEAK(n + 1);                                                                                   \
    LEAK(n + 2);                                                                                   \
    LEAK(n + 3);                                                                                   \
    LEAK(n + 4);                                                                                   \
    LEAK(n + 5);                                                                                   \
    LEAK(n + 6);                                                                                   \
    LEAK(n + 7);                                                                                   \
    LEAK(n + 8);                                                                                   \
    LEAK(n + 9)

__attribute__((noinline)) void leak_sites(void) {
    LEAK10(0);
    LEAK10(10);
    LEAK10(20);
    LEAK10(30);
    LEAK10(40);
    LEAK10(50);
    LEAK10(60);
    LEAK10(70);
    LEAK10(80);
    LEAK10(90);
    LEAK10(100);
    LEAK10(110);
    LEAK10(120);
    LEAK10(130);
    LEAK10(140);
}

int main(void) {
    leak_sites();
    return 0;
}
