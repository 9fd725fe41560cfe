/* libstatic_init.cpp - a C++ library whose static initialiser allocates (a registry, as plugin
 * libraries keep), linked by static_init_main.cpp.
 * Build: c++ -shared -fPIC -g -O0 -o libstatic_init.so libstatic_init.cpp
 * Its constructor runs before the program's main (and, as a dependency of the program, before a
 * preloaded library's own constructors): registry_init keeps 100000 B for the life of the process
 * (1 block, still live at exit), and a std::vector of 1000 ints is built and freed.
 */
#include <cstring>
#include <vector>

void *volatile registry_sink;

__attribute__((noinline)) static char *registry_init() {
    char *r = new char[100000];
    std::memset(r, 0, 100000);
    return r;
}

struct Registry {
    char *table;
    Registry() : table(registry_init()) {
        std::vector<int> scratch(1000, 1);
        table[0] = (char)scratch.size();
        registry_sink = table;
    }
};

static Registry registry;

extern "C" int registry_size() { return registry.table[0] == (char)1000 ? 100000 : -1; }
