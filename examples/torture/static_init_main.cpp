/* static_init_main.cpp - links libstatic_init.so (whose static initialiser allocates) and uses it.
 * Build: c++ -g -O0 -o static_init_main static_init_main.cpp -L. -lstatic_init -Wl,-rpath,DIR
 * Prints "registry 100000". Leaks: the library's 100000 B block from registry_init.
 */
#include <cstdio>

extern "C" int registry_size();

int main() {
    std::printf("registry %d\n", registry_size());
    return 0;
}
