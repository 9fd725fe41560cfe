/* tls_dtors.c - __thread data and pthread key destructors that allocate, on 8 threads.
 * Build: cc -g -O0 -pthread -o tls_dtors tls_dtors.c
 * Each thread sets a key to a 40 B block; the key's destructor frees it and leaks 77 B in
 * key_dtor_leak (8 blocks, 616 B). Each thread also frees a __thread buffer of 32 B before it ends.
 * Prints "threads 8 dtors 8".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;
static pthread_key_t key;
static __thread char *tls_buf;
static int dtors;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void key_dtor_leak(void) { sink = malloc(77); }

static void dtor(void *v) {
    free(v);
    key_dtor_leak();
    pthread_mutex_lock(&mu);
    dtors++;
    pthread_mutex_unlock(&mu);
}

static void *body(void *arg) {
    (void)arg;
    tls_buf = malloc(32);
    tls_buf[0] = 1;
    pthread_setspecific(key, malloc(40));
    free(tls_buf);
    return NULL;
}

int main(void) {
    pthread_key_create(&key, dtor);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    printf("threads 8 dtors %d\n", dtors);
    return 0;
}
