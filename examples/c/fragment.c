/* fragment.c: a fragmenting allocation pattern. 40000 blocks of 1000 B, every other one freed, then
 * 20000 blocks of 3000 B that cannot fit in the 1000 B holes: the allocator keeps ~20 MB free inside
 * its arena that it cannot return while the surviving small blocks sit between the holes.
 * It pauses 300 ms so the shim's 100 ms heap samples see that state.
 * Expected report: fragmentation.peak_free_held_bytes around 20 MB, well above compact.c's.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SMALL 40000
#define BIG 20000

static void *small[SMALL];
static void *big[BIG];

int main(void) {
    for (int i = 0; i < SMALL; i++) {
        small[i] = malloc(1000);
        memset(small[i], 1, 1000);
    }
    for (int i = 0; i < SMALL; i += 2) {
        free(small[i]);
        small[i] = NULL;
    }
    for (int i = 0; i < BIG; i++) {
        big[i] = malloc(3000);
        memset(big[i], 2, 3000);
    }
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    return small[1] == NULL || big[0] == NULL;
}
