//go:build linux

// Command faultcost measures what a first touch of a memory page costs this machine's CPU, in
// the ways a gateway's store touches new memory: anonymous memory (the Go heap, Badger's
// memtable arena), the same after MADV_POPULATE_WRITE, with transparent huge pages asked for,
// and a MAP_SHARED mapping of a sparse file (Badger's memtable log), before and after an
// fdatasync (which write-protects the pages it writes back, so that the next write to each
// faults again). It prints CPU µs per 4 KiB page (getrusage: user and system time). A page
// touched again costs nothing measurable on bare metal; on a virtual machine whose hypervisor
// builds shadow page tables, each of these is a trap of tens of µs. Run it on the machine to
// judge by how much each byte a create makes the store keep costs there:
//
//	go run ./bench/faultcost [DIR]
//
// DIR (default the system's temporary directory) must be on the file system of the gateway's
// store; the program writes one 64 MiB sparse file there and deletes it.
package main

import (
	"fmt"
	"log"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	size     = 64 << 20
	pageSize = 4096
	hugeSize = 2 << 20
)

func main() {
	dir := os.TempDir()
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	fmt.Printf("anonymous, touched:                    %6.2f µs/page\n", perPage(size, func() { touch(anon(size)) }))
	fmt.Printf("anonymous, touched again:              %6.2f µs/page\n", touchedAgain())
	populated := anon(size)
	fmt.Printf("anonymous, MADV_POPULATE_WRITE:        %6.2f µs/page\n", perPage(size, func() { populate(populated) }))
	fmt.Printf("  then touched:                        %6.2f µs/page\n", perPage(size, func() { touch(populated) }))
	huge := hugeAligned(size)
	fmt.Printf("anonymous, MADV_HUGEPAGE, touched:     %6.2f µs/page\n", perPage(size, func() { touch(huge) }))
	sharedFile(dir)
}

// perPage runs f and returns the process's CPU time it took, per page of n bytes.
func perPage(n int, f func()) float64 {
	before := cpuTime()
	f()
	return float64((cpuTime() - before).Nanoseconds()) / 1e3 / float64(n/pageSize)
}

// touchedAgain is the cost per page of writing to pages already touched once.
func touchedAgain() float64 {
	b := anon(size)
	touch(b)
	return perPage(size, func() { touch(b) })
}

// sharedFile measures a MAP_SHARED mapping of a sparse file in dir: the first write to each
// page, and the write after an fdatasync.
func sharedFile(dir string) {
	f, err := os.CreateTemp(dir, "faultcost")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		log.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("shared file mapping, touched:          %6.2f µs/page\n", perPage(size, func() { touch(m) }))
	start := time.Now()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("  fdatasync of the %d MiB:              %v\n", size>>20, time.Since(start).Round(time.Millisecond))
	fmt.Printf("  touched again after the sync:        %6.2f µs/page\n", perPage(size, func() { touch(m) }))
}

// anon maps n bytes of private anonymous memory.
func anon(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

// hugeAligned maps n bytes of anonymous memory aligned to a huge page and asks for transparent
// huge pages there (honoured when /sys/kernel/mm/transparent_hugepage/enabled allows madvise).
func hugeAligned(n int) []byte {
	raw := anon(n + hugeSize)
	off := (hugeSize - int(uintptr(unsafe.Pointer(&raw[0]))%hugeSize)) % hugeSize
	b := raw[off : off+n]
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		fmt.Println("MADV_HUGEPAGE refused:", err)
	}
	return b
}

// populate prefaults b writable (MADV_POPULATE_WRITE, Linux 5.14).
func populate(b []byte) {
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
		fmt.Println("MADV_POPULATE_WRITE refused:", err)
	}
}

// touch writes one byte of every page of b.
func touch(b []byte) {
	for i := 0; i < len(b); i += pageSize {
		b[i]++
	}
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
