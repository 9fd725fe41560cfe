// cpp_new.cpp - operator new / new[] leaks. Build: c++ -g -O0 -o cpp_new cpp_new.cpp
//
// Expected `memshim report` (leaks.host), sites from this file's functions, exactly:
//   leak_objects  200 B in 5 blocks (5 x `new Obj`, sizeof(Obj) == 40, one call site)
//   leak_array    400 B in 1 block  (`new int[100]`)
//   churn_objects no site (100 new/delete and 100 new[]/delete[] pairs)
// The frames between malloc and these functions are libstdc++'s operator new (and operator
// new[]); the report demangles them, e.g. "operator new(unsigned long)".
// Exits with status 0 and prints nothing.
#include <cstring>

struct Obj {
    long a, b, c, d, e;
};
static_assert(sizeof(Obj) == 40, "Obj must be 40 bytes");

void *volatile sink;

extern "C" __attribute__((noinline)) void leak_objects() {
    for (int i = 0; i < 5; i++) {
        Obj *o = new Obj();
        o->a = i;
        sink = o;
    }
}

extern "C" __attribute__((noinline)) void leak_array() {
    int *a = new int[100];
    std::memset(a, 0, 100 * sizeof(int));
    sink = a;
}

extern "C" __attribute__((noinline)) void churn_objects() {
    for (int i = 0; i < 100; i++) {
        Obj *o = new Obj();
        sink = o;
        delete o;
        char *c = new char[1 + i];
        sink = c;
        delete[] c;
    }
}

int main() {
    leak_objects();
    leak_array();
    churn_objects();
    return 0;
}
