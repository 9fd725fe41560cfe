/* small_stacks.c - threads with the smallest stacks glibc allows (PTHREAD_STACK_MIN, twice that, and
 * 64 KiB) allocate and free 16 calls deep (about 5 KiB of their stack used) under the shim, whose hooks
 * run on those stacks: the program must run as it does bare (before the shim measured the room left,
 * libunwind overflowed a 16 KiB stack). Expected: prints "stack N ok" three times; exit 0; 3000
 * allocations and 3000 frees from deep(), no leak from it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) int deep(int d, int i) {
    volatile char pad[256];
    pad[0] = (char)d;
    if (d == 0) {
        /* volatile: the compiler may not drop a malloc/free pair it can see through. */
        char *volatile p = malloc(64 + i);
        if (p) p[0] = 1;
        free(p);
        return pad[0];
    }
    return deep(d - 1, i) + pad[0];
}

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) deep(16, i);
    return NULL;
}

int main(void) {
    size_t sizes[] = {PTHREAD_STACK_MIN, 2 * PTHREAD_STACK_MIN, 65536};
    for (int k = 0; k < 3; k++) {
        pthread_attr_t a;
        pthread_t t;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, sizes[k]);
        if (pthread_create(&t, &a, work, NULL) != 0) {
            printf("pthread_create failed\n");
            return 1;
        }
        pthread_join(t, NULL);
        printf("stack %zu ok\n", sizes[k]);
    }
    return 0;
}
