// Package testredis runs a real redis-server for tests and benchmarks: it finds the binary
// (installing Debian's redis-server package with apt-get when it is missing), starts it on a
// loopback port reserved for the test (package testport) in a temporary directory with AOF on and
// fsync on every write, stops it by its PID, and restarts it on the same directory and port to
// show what survived.
package testredis

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mediagw/mediagw/internal/debpkg"
	"github.com/mediagw/mediagw/internal/testport"
)

// TB is the part of testing.TB that the helpers use, so that benchmarks' mains can use them too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

var (
	findOnce sync.Once
	binary   string
	findErr  error
)

// Binary returns the path of redis-server, installing it with apt-get when it is not on PATH.
// The install works as root without a terminal (as CI runs): see package debpkg.
func Binary() (string, error) {
	findOnce.Do(func() {
		binary, findErr = findOrInstall()
	})
	return binary, findErr
}

func findOrInstall() (string, error) {
	return debpkg.Find("redis-server", []string{"redis-server"}, []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"})
}

// Server is a redis-server process that a test started.
type Server struct {
	// Addr is the loopback host:port it listens on.
	Addr string
	// Dir is its working directory, where the append-only file lives.
	Dir string
	// Password, when set, is required from clients (requirepass).
	Password string

	tb   TB
	opts Options
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// Options change how the server is started.
type Options struct {
	// Password sets requirepass.
	Password string
	// Fsync is the appendfsync policy; default "always".
	Fsync string
	// NoAOF turns the append-only file off (appendonly no).
	NoAOF bool
	// TLS, when set, makes the server listen with TLS only (--port 0, --tls-port), with the
	// certificate and key of TLS; a client certificate is optional.
	TLS *TLS
	// Args are more command-line options (for example "--cluster-enabled", "yes").
	Args []string
	// Sentinel, when set, starts a sentinel (redis-server --sentinel) instead of a data server.
	Sentinel *SentinelOptions
}

// Start starts a redis-server on a free loopback port in a fresh temporary directory. It stops
// when the test ends. A failure to install or start it fails the test: nothing is skipped.
func Start(tb TB, opts Options) *Server {
	tb.Helper()
	s := &Server{Dir: tb.TempDir(), Password: opts.Password, tb: tb}
	s.start(opts)
	tb.Cleanup(s.Stop)
	return s
}

// URL is a redis:// URL of the server (rediss:// when it has TLS), with its password when it
// has one.
func (s *Server) URL() string {
	scheme := "redis://"
	if s.opts.TLS != nil {
		scheme = "rediss://"
	}
	if s.Password != "" {
		return scheme + ":" + s.Password + "@" + s.Addr
	}
	return scheme + s.Addr
}

func (s *Server) start(opts Options) {
	s.tb.Helper()
	bin, err := Binary()
	if err != nil {
		s.tb.Fatalf("redis-server: %v", err)
	}
	// The options are kept first: ping reads them (TLS).
	s.opts = opts
	s.log = filepath.Join(s.Dir, "redis.log")
	restart := s.Addr != ""
	// A first start that finds its port taken (by a program that binds it without asking
	// testport) moves to another port. A restart must keep its port, which its clients know:
	// it waits for the port instead.
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; ; attempt++ {
		if !restart {
			s.Addr = fmt.Sprintf("127.0.0.1:%d", testport.Reserve(s.tb))
		}
		err := s.run(bin)
		if err == nil {
			return
		}
		out, readErr := os.ReadFile(s.log)
		if readErr != nil {
			out = []byte("(no log: " + readErr.Error() + ")")
		}
		if bytes.Contains(out, []byte("Address already in use")) && attempt < 10 && time.Now().Before(deadline) {
			// The log is appended to: truncate it so the next try's failure is read alone.
			if err := os.Truncate(s.log, 0); err != nil {
				s.tb.Fatalf("redis log: %v", err)
			}
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			continue
		}
		s.tb.Fatalf("redis-server did not start on %s: %v\n%s", s.Addr, err, debpkg.Tail(out))
	}
}

// run starts redis-server on s.Addr and waits until it answers; it stops the process again
// when it does not.
func (s *Server) run(bin string) error {
	_, p, _ := strings.Cut(s.Addr, ":")
	port, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Errorf("address %q: %v", s.Addr, err)
	}
	args, err := s.args(port)
	if err != nil {
		s.tb.Fatalf("redis-server options: %v", err)
	}
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.tb.Fatalf("redis log: %v", err)
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = s.Dir
	// The server dies with the process that started it, even when that one is killed.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		s.tb.Fatalf("starting redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		// The exit status does not matter: Stop kills it on purpose.
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}(s.cmd, s.done)
	if err := s.waitReady(20 * time.Second); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// args are the command-line options of a data server or of a sentinel.
func (s *Server) args(port int) ([]string, error) {
	opts := s.opts
	if opts.Sentinel != nil {
		conf, err := opts.Sentinel.writeConfig(s.Dir, port, opts.TLS)
		if err != nil {
			return nil, err
		}
		return []string{conf, "--sentinel"}, nil
	}
	fsync := opts.Fsync
	if fsync == "" {
		fsync = "always"
	}
	aof := "yes"
	if opts.NoAOF {
		aof = "no"
	}
	plainPort := fmt.Sprint(port)
	if opts.TLS != nil {
		plainPort = "0"
	}
	args := []string{
		"--port", plainPort,
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--appendonly", aof,
		"--appendfsync", fsync,
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--logfile", "",
	}
	if opts.TLS != nil {
		args = append(args,
			"--tls-port", fmt.Sprint(port),
			"--tls-cert-file", opts.TLS.CertFile,
			"--tls-key-file", opts.TLS.KeyFile,
			"--tls-ca-cert-file", opts.TLS.CAFile,
			"--tls-auth-clients", "optional")
	}
	if opts.Password != "" {
		args = append(args, "--requirepass", opts.Password)
	}
	return append(args, opts.Args...), nil
}

// waitReady sends PING until the server answers (also while it loads the AOF after a restart,
// when it answers -LOADING).
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("redis-server exited")
		default:
		}
		last = s.ping()
		if last == nil {
			return nil
		}
		time.Sleep(30 * time.Millisecond)
	}
	return last
}

func (s *Server) ping() error {
	conn, err := s.dial(time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	cmd := "PING\r\n"
	if s.Password != "" {
		cmd = fmt.Sprintf("AUTH %s\r\nPING\r\n", s.Password)
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	if s.Password != "" {
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("auth: %q %v", line, err)
		}
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("ping: %q", strings.TrimSpace(line))
	}
	return nil
}

// dial connects to the server, with TLS when it has TLS.
func (s *Server) dial(timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if s.opts.TLS != nil {
		config, err := s.opts.TLS.adminConfig()
		if err != nil {
			return nil, err
		}
		return tls.DialWithDialer(d, "tcp", s.Addr, config)
	}
	return d.Dial("tcp", s.Addr)
}

// Stop stops the server with SIGTERM (which lets it finish writing the AOF), repeated until it
// goes, or SIGKILL when it does not go within 10 s, and waits for it. Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	if s.gone() {
		return
	}
	// redis-server refuses a SIGTERM that comes while it writes its first AOF (a replica
	// right after its sync: "Writing initial AOF, can't exit") and does not try again by itself,
	// so the signal is repeated until it goes. A repeated SIGTERM during a shutdown that is under
	// way changes nothing.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		// An error means the process is already gone, which done shows.
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
			return
		case <-tick.C:
		case <-deadline:
			_ = s.cmd.Process.Kill() // already gone if it fails; done closes either way
			<-s.done
			return
		}
	}
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
	if s.gone() {
		return
	}
	_ = s.cmd.Process.Kill() // already gone if it fails; done closes either way
	<-s.done
}

// gone reports whether the server never started or has exited.
func (s *Server) gone() bool {
	if s.cmd == nil || s.cmd.Process == nil {
		return true
	}
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Restart stops the server (SIGKILL when crash is true, SIGTERM otherwise) and starts it again on
// the same directory and port, so that it reloads its append-only file.
func (s *Server) Restart(crash bool) {
	s.tb.Helper()
	if crash {
		s.Kill()
	} else {
		s.Stop()
	}
	s.start(s.opts)
}

// PID is the process id of the running server.
func (s *Server) PID() int { return s.cmd.Process.Pid }
