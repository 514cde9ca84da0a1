// Package debpkg installs Debian packages that tests need (redis-server, chromium) when they are
// missing, so that the test suite runs on a fresh machine with nothing but Go: as root, without
// a terminal, waiting for another install's dpkg lock rather than failing on it.
package debpkg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Find returns the first of paths that exists, or the first of names on PATH; when none does,
// it installs pkg with apt-get (running `apt-get update` first only when a plain install fails)
// and looks again.
func Find(pkg string, names, paths []string) (string, error) {
	if path, err := lookup(names, paths); err == nil {
		return path, nil
	}
	out, err := aptGet("install", "-y", "--no-install-recommends", pkg)
	if err != nil {
		if uout, uerr := aptGet("update"); uerr != nil {
			return "", fmt.Errorf("apt-get update: %v\n%s", uerr, Tail(uout))
		}
		if out, err = aptGet("install", "-y", "--no-install-recommends", pkg); err != nil {
			return "", fmt.Errorf("apt-get install %s: %v\n%s", pkg, err, Tail(out))
		}
	}
	path, err := lookup(names, paths)
	if err != nil {
		return "", fmt.Errorf("%s not found after installing it: %v\n%s", pkg, err, Tail(out))
	}
	return path, nil
}

func aptGet(args ...string) ([]byte, error) {
	// Another install (a parallel test package) may hold the dpkg lock: wait for it.
	cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=600"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

func lookup(names, paths []string) (string, error) {
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	for _, path := range paths {
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", errors.New("none of the programs is on PATH")
}

// Tail is the last 2,000 bytes of a command's output, for an error message.
func Tail(b []byte) string {
	const n = 2000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
