/* atexit_dtors.cpp - atexit handlers and global destructors that allocate and free.
 * Build: c++ -g -O0 -o atexit_dtors atexit_dtors.cpp
 * The atexit handler frees the 1000 blocks of 24 B that make_blocks made and leaks 44 B in atexit_leak; the global
 * object's destructor frees its 2000 B buffer and leaks 66 B in global_dtor_leak. main leaks nothing.
 * Prints "main done" (and "atexit ran" from the handler, "dtor ran" from the destructor).
 */
#include <cstdio>
#include <cstdlib>

void *volatile sink;
static void *blocks[1000];

__attribute__((noinline)) static void make_blocks() {
    for (auto &b : blocks)
        b = std::malloc(24);
}
__attribute__((noinline)) static void atexit_leak() { sink = std::malloc(44); }
__attribute__((noinline)) static void global_dtor_leak() { sink = std::malloc(66); }

struct Global {
    char *buf;
    Global() : buf(new char[2000]) {}
    ~Global() {
        delete[] buf;
        global_dtor_leak();
        std::printf("dtor ran\n");
    }
};
static Global global;

static void at_exit_handler() {
    for (auto &b : blocks)
        std::free(b);
    atexit_leak();
    std::printf("atexit ran\n");
}

int main() {
    make_blocks();
    global.buf[0] = 1;
    std::atexit(at_exit_handler);
    std::printf("main done\n");
    return 0;
}
