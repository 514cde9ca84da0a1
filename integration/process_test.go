package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	caddyBin  string
	buildErr  error
)

// caddyBinary builds ./cmd/caddy once per test run, as ./xcaddy.sh does without xcaddy.
func caddyBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildCaddy()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildCaddy builds ./cmd/caddy the first time it is called; later calls wait for that build.
func buildCaddy() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mediagw-bin-")
		if err != nil {
			buildErr = err
			return
		}
		caddyBin = filepath.Join(dir, "caddy")
		buildErr = goBuild(repoDir(), caddyBin, "./cmd/caddy")
	})
	return caddyBin, buildErr
}

// removeCaddyBinary removes the binary buildCaddy made (about 108 MB), once every test is done:
// it waits for a build still running.
func removeCaddyBinary() {
	buildOnce.Do(func() {})
	if caddyBin != "" {
		os.RemoveAll(filepath.Dir(caddyBin))
	}
}

// repoDir is the repository's root directory.
func repoDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// goBuild builds pkg from the module in dir into out.
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, output)
	}
	return nil
}

// caddyProcess is a caddy subprocess running a Caddyfile.
type caddyProcess struct {
	cmd *exec.Cmd
	log string
}

// startCaddyProcess runs the built caddy on a Caddyfile and waits until readyURL answers.
//
// A test whose gateways are all such processes (no in-process Caddy, which is one per test
// binary, and no t.Setenv) calls t.Parallel: it runs after the in-process tests, beside the
// other such tests, each with its own ports (freePort), store and redis-server.
func startCaddyProcess(t *testing.T, caddyfile, readyURL string) *caddyProcess {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &caddyProcess{log: filepath.Join(dir, "caddy.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(caddyBinary(t), "run", "--config", cfg, "--adapter", "caddyfile")
	p.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill(); logFile.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(readyURL)
		if err == nil {
			resp.Body.Close()
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _ := os.ReadFile(p.log)
	t.Fatalf("caddy did not become ready at %s:\n%s", readyURL, out)
	return nil
}

// kill sends SIGKILL and waits for the process to go.
func (p *caddyProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}
