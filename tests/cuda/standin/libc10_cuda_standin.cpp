/* libc10_cuda_standin.cpp - a stand-in for PyTorch 2.11's libc10_cuda.so, for machines without a GPU.
 *
 * Build: g++ -std=c++17 -shared -fPIC -O1 -g -o DIR/torch/lib/libc10_cuda.so libc10_cuda_standin.cpp -ldl
 * with DIR/torch/version.py saying __version__ = '2.11.0+standin' (tests/cuda/build.sh does this).
 *
 * What memshim relies on, with PyTorch 2.11's binary layout (x86-64, libstdc++):
 * - the exported std::atomic<CUDAAllocator*> c10::cuda::CUDACachingAllocator::allocator;
 * - the allocator's virtual table: initialized() at slot 6, init(int) at 16, cacheInfo(DeviceIndex,
 *   size_t*) at 22, attachOutOfMemoryObserver(std::function<void(int64_t, size_t, size_t, size_t)>)
 *   at 43, attachAllocatorTraceTracker(std::function<void(const TraceEntry&)>) at 44, and
 *   std::string name() at 49 (slots 0 and 1 are the destructors); the other slots are placeholders;
 * - TraceEntry: 136 bytes, action (int) at 0, device (int8) at 4, addr at 8, stream at 32, size at 40;
 *   actions ALLOC 0, FREE_REQUESTED 1, FREE_COMPLETED 2, SEGMENT_ALLOC 3, SEGMENT_FREE 4, OOM 8;
 * - attaching before init() is lost (the real one hands callbacks to per-device allocators that
 *   init() creates); trackers run with the allocator's recursive lock held, observers after it is
 *   released; cacheInfo starts from the value passed and asks the driver only when it is 0.
 *
 * The allocator itself is a small caching allocator over the stand-in driver (cuMemAlloc_v2 through
 * dlopen("libcuda.so.1")): sizes round up to 512 bytes; requests up to 1 MiB come from 2 MiB small
 * segments, larger ones from 20 MiB segments, and requests of 10 MiB or more get a segment of their
 * own rounded up to 2 MiB; best fit over free blocks of the right pool, split when the rest is at
 * least 512 bytes, merged with free neighbours on free. When the driver refuses a segment, every
 * wholly free segment is released and the driver asked once more; then it is an out-of-memory error.
 * Trace events carry the requested (unrounded) size, as PyTorch's do.
 *
 * Exported for the tests (extern "C"): standin_torch_init(), standin_torch_malloc(size) (0 on out of
 * memory), standin_torch_free(ptr), standin_torch_empty_cache(), standin_torch_hooks() (trackers *
 * 100 + observers attached). STANDIN_TORCH_BACKEND names the backend name() reports (default native).
 */
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace standin {

struct TraceEntry {
    int action;
    int8_t device;
    size_t addr;
    std::shared_ptr<void> context;
    void *stream;
    size_t size;
    std::pair<unsigned long long, unsigned long long> mempool;
    int64_t time;
    std::string compile_context;
    std::string user_metadata;
};
static_assert(sizeof(TraceEntry) == 136, "PyTorch 2.11's TraceEntry is 136 bytes");
static_assert(offsetof(TraceEntry, device) == 4 && offsetof(TraceEntry, addr) == 8, "layout");
static_assert(offsetof(TraceEntry, stream) == 32 && offsetof(TraceEntry, size) == 40, "layout");

enum { ALLOC = 0, FREE_REQUESTED = 1, FREE_COMPLETED = 2, SEGMENT_ALLOC = 3, SEGMENT_FREE = 4, OOM = 8 };

using Tracker = std::function<void(const TraceEntry &)>;
using Observer = std::function<void(int64_t, size_t, size_t, size_t)>;

typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_free_t)(unsigned long long);
typedef int (*cu_info_t)(size_t *, size_t *);
typedef int (*cu_int_t)(int);

struct Block {
    size_t size;
    size_t requested;
    bool live;
};

struct Segment {
    unsigned long long base;
    size_t size;
    bool small;
    std::map<size_t, Block> blocks; // by offset
};

const size_t MiB = 1u << 20;

struct Allocator {
    // Slots 0 and 1: the destructors.
    virtual ~Allocator() {}
    virtual void slot2() {}
    virtual void slot3() {}
    virtual void slot4() {}
    virtual void slot5() {}
    virtual bool initialized() { return ready; }
    virtual void slot7() {}
    virtual void slot8() {}
    virtual void slot9() {}
    virtual void slot10() {}
    virtual void slot11() {}
    virtual void slot12() {}
    virtual void slot13() {}
    virtual void slot14() {}
    virtual void slot15() {}
    virtual void init(int device_count);
    virtual void slot17() {}
    virtual void slot18() {}
    virtual void slot19() {}
    virtual void slot20() {}
    virtual void slot21() {}
    virtual void cacheInfo(int8_t device, size_t *largest);
    virtual void slot23() {}
    virtual void slot24() {}
    virtual void slot25() {}
    virtual void slot26() {}
    virtual void slot27() {}
    virtual void slot28() {}
    virtual void slot29() {}
    virtual void slot30() {}
    virtual void slot31() {}
    virtual void slot32() {}
    virtual void slot33() {}
    virtual void slot34() {}
    virtual void slot35() {}
    virtual void slot36() {}
    virtual void slot37() {}
    virtual void slot38() {}
    virtual void slot39() {}
    virtual void slot40() {}
    virtual void slot41() {}
    virtual void slot42() {}
    virtual void attachOutOfMemoryObserver(Observer observer) {
        std::lock_guard<std::recursive_mutex> g(mutex);
        if (ready) observers.push_back(std::move(observer));
    }
    virtual void attachAllocatorTraceTracker(Tracker tracker) {
        std::lock_guard<std::recursive_mutex> g(mutex);
        if (ready) trackers.push_back(std::move(tracker));
    }
    virtual void slot45() {}
    virtual void slot46() {}
    virtual void slot47() {}
    virtual void slot48() {}
    virtual std::string name() {
        const char *b = getenv("STANDIN_TORCH_BACKEND");
        return b ? b : "native";
    }

    unsigned long long malloc(size_t size);
    void free(unsigned long long ptr);
    void empty_cache();

    std::recursive_mutex mutex;
    bool ready = false;
    std::vector<Tracker> trackers;
    std::vector<Observer> observers;
    std::vector<Segment> segments;
    cu_alloc_t cu_alloc = nullptr;
    cu_free_t cu_free = nullptr;
    cu_info_t cu_info = nullptr;

  private:
    void trace(int action, size_t addr, size_t size) {
        TraceEntry e{action, 0, addr, nullptr, nullptr, size, {0, 0}, 0, "", ""};
        for (auto &t : trackers) t(e);
    }
    bool take(bool small, size_t rounded, size_t requested, unsigned long long *out);
    void release_free_segments();
};

void Allocator::init(int) {
    std::lock_guard<std::recursive_mutex> g(mutex);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) return;
    auto cu_init = (cu_int_t)dlsym(cuda, "cuInit");
    typedef int (*get_t)(int *, int);
    typedef int (*retain_t)(void **, int);
    typedef int (*set_t)(void *);
    auto dev_get = (get_t)dlsym(cuda, "cuDeviceGet");
    auto retain = (retain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain");
    auto set = (set_t)dlsym(cuda, "cuCtxSetCurrent");
    cu_alloc = (cu_alloc_t)dlsym(cuda, "cuMemAlloc_v2");
    cu_free = (cu_free_t)dlsym(cuda, "cuMemFree_v2");
    cu_info = (cu_info_t)dlsym(cuda, "cuMemGetInfo_v2");
    int dev = 0;
    void *ctx = nullptr;
    if (cu_init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set(ctx)) return;
    ready = true;
}

void Allocator::cacheInfo(int8_t, size_t *largest) {
    std::lock_guard<std::recursive_mutex> g(mutex);
    if (*largest == 0) {
        size_t total = 0;
        cu_info(largest, &total);
    }
    for (auto &s : segments)
        for (auto &kv : s.blocks)
            if (!kv.second.live && kv.second.size > *largest) *largest = kv.second.size;
}

bool Allocator::take(bool small, size_t rounded, size_t requested, unsigned long long *out) {
    Segment *best_seg = nullptr;
    size_t best_off = 0, best_size = SIZE_MAX;
    for (auto &s : segments) {
        if (s.small != small) continue;
        for (auto &kv : s.blocks)
            if (!kv.second.live && kv.second.size >= rounded && kv.second.size < best_size) {
                best_seg = &s;
                best_off = kv.first;
                best_size = kv.second.size;
            }
    }
    if (!best_seg) return false;
    Block &b = best_seg->blocks[best_off];
    if (b.size - rounded >= 512) {
        best_seg->blocks[best_off + rounded] = Block{b.size - rounded, 0, false};
        b.size = rounded;
    }
    b.live = true;
    b.requested = requested;
    *out = best_seg->base + best_off;
    return true;
}

void Allocator::release_free_segments() {
    for (size_t i = 0; i < segments.size();) {
        Segment &s = segments[i];
        if (s.blocks.size() == 1 && !s.blocks.begin()->second.live) {
            trace(SEGMENT_FREE, s.base, s.size);
            cu_free(s.base);
            segments.erase(segments.begin() + i);
        } else {
            i++;
        }
    }
}

unsigned long long Allocator::malloc(size_t size) {
    std::unique_lock<std::recursive_mutex> lock(mutex);
    size_t rounded = size < 512 ? 512 : (size + 511) / 512 * 512;
    bool small = rounded <= MiB;
    unsigned long long ptr = 0;
    if (!take(small, rounded, size, &ptr)) {
        size_t seg = small ? 2 * MiB : rounded < 10 * MiB ? 20 * MiB : (rounded + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
        unsigned long long base = 0;
        int r = cu_alloc(&base, seg);
        if (r != 0) {
            release_free_segments();
            r = cu_alloc(&base, seg);
        }
        if (r != 0) {
            size_t free_b = 0, total = 0;
            cu_info(&free_b, &total);
            trace(OOM, free_b, rounded);
            std::vector<Observer> observers_now = observers;
            lock.unlock();
            for (auto &o : observers_now) o(0, rounded, total, free_b);
            return 0;
        }
        Segment s{base, seg, small, {}};
        s.blocks[0] = Block{seg, 0, false};
        segments.push_back(s);
        trace(SEGMENT_ALLOC, base, seg);
        take(small, rounded, size, &ptr);
    }
    trace(ALLOC, ptr, size);
    return ptr;
}

void Allocator::free(unsigned long long ptr) {
    std::lock_guard<std::recursive_mutex> g(mutex);
    for (auto &s : segments) {
        if (ptr < s.base || ptr >= s.base + s.size) continue;
        auto it = s.blocks.find(ptr - s.base);
        if (it == s.blocks.end() || !it->second.live) return;
        trace(FREE_REQUESTED, ptr, it->second.requested);
        it->second.live = false;
        trace(FREE_COMPLETED, ptr, it->second.requested);
        auto next = std::next(it);
        if (next != s.blocks.end() && !next->second.live) {
            it->second.size += next->second.size;
            s.blocks.erase(next);
        }
        if (it != s.blocks.begin()) {
            auto prev = std::prev(it);
            if (!prev->second.live) {
                prev->second.size += it->second.size;
                s.blocks.erase(it);
            }
        }
        return;
    }
}

void Allocator::empty_cache() {
    std::lock_guard<std::recursive_mutex> g(mutex);
    release_free_segments();
}

Allocator the_allocator;

} // namespace standin

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {
// PyTorch's is std::atomic<CUDAAllocator*>: a variable's mangled name does not carry its type.
std::atomic<standin::Allocator *> allocator{&standin::the_allocator};
} // namespace CUDACachingAllocator
} // namespace cuda
} // namespace c10

extern "C" {
int standin_torch_init(void) {
    standin::the_allocator.init(1);
    return standin::the_allocator.initialized() ? 0 : 1;
}
unsigned long long standin_torch_malloc(size_t size) { return standin::the_allocator.malloc(size); }
void standin_torch_free(unsigned long long ptr) { standin::the_allocator.free(ptr); }
void standin_torch_empty_cache(void) { standin::the_allocator.empty_cache(); }
int standin_torch_hooks(void) {
    return (int)(standin::the_allocator.trackers.size() * 100 + standin::the_allocator.observers.size());
}
}
