/* exceptions.cpp - C++ exceptions thrown through 50 frames that allocate, 200 times.
 * Build: c++ -g -O0 -o exceptions exceptions.cpp
 * Every frame owns a std::string of 100 characters (freed by unwinding) and leaks 24 B in
 * frame_leak (raw new, never deleted): 200 * 50 = 10000 blocks, 240000 B. The exception object
 * carries a 200-character message. Prints "caught 200".
 */
#include <cstdio>
#include <stdexcept>
#include <string>

void *volatile sink;

__attribute__((noinline)) static void frame_leak() { sink = new char[24]; }

__attribute__((noinline)) static void dive(int depth) {
    std::string s(100, 'a' + depth % 26);
    frame_leak();
    if (depth == 50)
        throw std::runtime_error(std::string(200, 'x'));
    dive(depth + 1);
    sink = &s;
}

int main() {
    int caught = 0;
    for (int i = 0; i < 200; i++) {
        try {
            dive(1);
        } catch (const std::runtime_error &e) {
            if (std::string(e.what()).size() == 200)
                caught++;
        }
    }
    std::printf("caught %d\n", caught);
    return 0;
}
