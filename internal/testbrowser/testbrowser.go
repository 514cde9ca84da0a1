// Package testbrowser gives tests a real headless browser: Debian's chromium (installed with
// apt-get when missing), driven through the DevTools protocol by chromedp.
package testbrowser

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/debpkg"
)

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Chromium returns the path of the chromium binary, installing Debian's package when missing.
func Chromium() (string, error) {
	findOnce.Do(func() {
		binary, findErr = debpkg.Find("chromium", []string{"chromium", "chromium-browser"}, []string{"/usr/bin/chromium"})
	})
	return binary, findErr
}

// New starts a headless chromium for the test, with a window of width×height, and returns a
// context that drives its first tab. The browser stops when the test ends; every action the
// test runs through the context is bounded by timeout in all.
func New(t testing.TB, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	path, err := Chromium()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		// With disable-dev-shm-usage chromium keeps its shared memory in files under TMPDIR
		// (org.chromium.Chromium.*), which a stopped browser leaves behind: a directory of the
		// test's own. A short one: chromium also makes its sockets there, and a long test's
		// t.TempDir() is past the 107 bytes a socket path may have.
		chromedp.Env("TMPDIR="+shortTempDir(t)),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	// The first action starts the browser, which lives as long as that action's context: so
	// that one has no timeout, and the timeout bounds what the test runs after it.
	if err := chromedp.Do(tab); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	return ctx
}

// shortTempDir is a new directory directly under the system's temporary directory, removed when
// the test ends.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
