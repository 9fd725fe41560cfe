// go_cgo.go - a Go program that calls C (cgo), so it is linked dynamically and the shim is preloaded
// into it. Eight goroutines allocate Go memory (the Go runtime maps its heap and stacks through
// x_cgo_mmap, reserving far more address space, PROT_NONE, than it uses) and call C's malloc and
// free 20 times each; then 123 B are leaked from C in leak.
// Build: go build -o go_cgo go_cgo.go
// Go ends the process with the exit system call itself (no C library exit runs, so no destructor
// closes the trace): the program pauses 200 ms first, and the shim puts what it recorded on disk
// once its queue goes quiet. Prints "go total 160000" and exits 0.
package main

/*
#include <stdlib.h>
static void *leak(int n) { return malloc(n); }
*/
import "C"

import (
	"fmt"
	"sync"
	"time"
)

func main() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kept := make([][]byte, 0)
			for i := 0; i < 20000; i++ {
				kept = append(kept, make([]byte, 100))
				if i%1000 == 0 {
					C.free(C.leak(64))
				}
			}
			mu.Lock()
			total += len(kept)
			mu.Unlock()
		}()
	}
	wg.Wait()
	C.leak(123)
	fmt.Println("go total", total)
	time.Sleep(200 * time.Millisecond)
}
