/* plt_malloc.c - an executable that takes the addresses of malloc and free. Built without PIE
 * (cc -g -O0 -fno-pie -no-pie), it then defines both in its dynamic symbol table: canonical PLT
 * entries, the addresses every object must agree on, which only jump to the real definitions (the
 * shim's, when it is preloaded). Ubuntu 24.04's python3.12 exports malloc this way.
 * Calls the allocator through those pointers and directly: 1000 malloc/free pairs, then leaks
 * 4321 B in plt_leak (through the pointer) and 99 B in direct_leak. Prints "same 1".
 */
#include <stdio.h>
#include <stdlib.h>

typedef void *(*alloc_fn)(size_t);
typedef void (*free_fn)(void *);

alloc_fn volatile my_malloc = malloc;
free_fn volatile my_free = free;
void *volatile sink;
void *volatile sink2;

__attribute__((noinline)) static void plt_leak(void) { sink = my_malloc(4321); }
__attribute__((noinline)) static void direct_leak(void) { sink2 = malloc(99); }

int main(void) {
    for (int i = 0; i < 1000; i++)
        my_free(my_malloc(100 + i));
    plt_leak();
    direct_leak();
    printf("same %d\n", my_malloc == malloc && my_free == free);
    return 0;
}
