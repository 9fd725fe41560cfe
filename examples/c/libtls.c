/* libtls.c: a library with thread-local storage whose constructor allocates. Built many times
 * (-DTLS_ID=n) and dlopen'd by dlopen_tls.c. */
#include <stdlib.h>
#include <string.h>

__thread char tls_buffer[256];

static void *kept;

__attribute__((constructor)) static void tls_lib_init(void) {
    kept = malloc(64);
    memset(kept, 1, 64);
    tls_buffer[0] = 1;
}

int tls_touch(void) {
    tls_buffer[1]++;
    return tls_buffer[0] + tls_buffer[1];
}
