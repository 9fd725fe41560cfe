/* mmap_leak.c - an anonymous mapping left mapped, and one mapped then unmapped.
 * Build: cc -g -O0 -o mmap_leak mmap_leak.c
 *
 * Expected `memshim report`:
 *   leaks.mmap: exactly one site from this file: map_leak 12288 B in 1 mapping (3 x 4096 B);
 *               no site contains map_unmap (its 8192 B mapping is unmapped).
 *   leaks.host: no site contains map_leak or map_unmap.
 * Exits with status 0 and prints nothing.
 */
#include <string.h>
#include <sys/mman.h>

void *volatile sink;

__attribute__((noinline)) void map_leak(void) {
    void *p = mmap(NULL, 12288, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    memset(p, 1, 12288);
    sink = p;
}

__attribute__((noinline)) int map_unmap(void) {
    void *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    memset(p, 2, 8192);
    return munmap(p, 8192);
}

int main(void) {
    map_leak();
    if (map_unmap() != 0)
        return 1;
    return sink == NULL;
}
