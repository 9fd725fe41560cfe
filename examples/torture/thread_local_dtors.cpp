/* thread_local_dtors.cpp - C++ thread_local objects whose destructors allocate, on 8 threads and main.
 * Build: c++ -g -O0 -pthread -o thread_local_dtors thread_local_dtors.cpp
 * Each thread's Holder owns a std::vector<int>(100) (400 B, freed with it); its destructor leaks 55 B
 * in tl_dtor_leak: 8 threads + main's own at exit = 9 blocks, 495 B.
 * Prints "threads 8".
 */
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

void *volatile sink;

__attribute__((noinline)) static void tl_dtor_leak() { sink = new char[55]; }

struct Holder {
    std::vector<int> v;
    Holder() : v(100) {}
    ~Holder() { tl_dtor_leak(); }
};

static thread_local Holder holder;

static void body() { holder.v[0] = 1; }

int main() {
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; i++)
        ts.emplace_back(body);
    for (auto &t : ts)
        t.join();
    holder.v[0] = 2;
    std::printf("threads %zu\n", ts.size());
    return 0;
}
