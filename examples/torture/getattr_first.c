/* getattr_first.c - new threads call pthread_getattr_np before their first allocation.
 * Build: cc -g -O0 -pthread -o getattr_first getattr_first.c
 * 4 threads, each: pthread_getattr_np on itself (glibc allocates the cpu set inside it, holding the
 * thread's lock), then 1000 malloc/free pairs and a leak of 50 B in after_getattr_leak (4 blocks,
 * 200 B). Prints "stacks ok 4".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;
static int ok;

__attribute__((noinline)) static void after_getattr_leak(void) { sink = malloc(50); }

static void *body(void *arg) {
    (void)arg;
    pthread_attr_t a;
    size_t size = 0;
    void *addr = NULL;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &addr, &size);
        pthread_attr_destroy(&a);
    }
    for (int i = 0; i < 1000; i++) {
        char *p = malloc(16 + i);
        p[0] = 1;
        free(p);
    }
    after_getattr_leak();
    if (size > 0 && addr != NULL)
        __atomic_add_fetch(&ok, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("stacks ok %d\n", ok);
    return 0;
}
