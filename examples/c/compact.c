/* compact.c: the same amount of memory as fragment.c, allocated so that nothing is left in holes:
 * the small blocks are freed last-in first-out, so the freed memory joins the top of the heap and
 * can be reused or returned. It pauses 300 ms so the shim's 100 ms heap samples see that state.
 * Expected report: fragmentation.peak_free_held_bytes far below fragment.c's.
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
    for (int i = SMALL - 1; i >= SMALL / 2; i--) {
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
