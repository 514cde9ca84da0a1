package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func init() {
	caddy.RegisterModule(BufferedWriter{})
}

// BufferedWriter is a log writer that gathers entries in memory and hands them to another log
// writer in batches: at most every flush_interval, or when buffer_size bytes are waiting. It
// saves a system call per entry on busy logs such as mediagw's usage records
// (mediagw.usage), at the price of losing at most flush_interval of entries if the process is
// killed; a reload or a clean stop writes everything.
//
//	log usage {
//		output mediagw_buffered {
//			flush_interval 100ms
//			output file /var/log/caddy/usage.log
//		}
//		include mediagw.usage
//	}
type BufferedWriter struct {
	// WriterRaw is the writer that receives the batches. Required.
	WriterRaw json.RawMessage `json:"writer,omitempty" caddy:"namespace=caddy.logging.writers inline_key=output"`
	// FlushInterval is the longest an entry waits in memory. Default: 100ms.
	FlushInterval caddy.Duration `json:"flush_interval,omitempty"`
	// BufferSize is how many bytes are gathered before they are written at once. Default: 64 KiB.
	BufferSize int `json:"buffer_size,omitempty"`

	writer caddy.WriterOpener
}

// Buffered writer defaults.
const (
	DefaultBufferFlush = 100 * time.Millisecond
	DefaultBufferSize  = 64 << 10
)

// CaddyModule returns the Caddy module information.
func (BufferedWriter) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.logging.writers.mediagw_buffered",
		New: func() caddy.Module { return new(BufferedWriter) },
	}
}

// Provision loads the wrapped writer.
func (b *BufferedWriter) Provision(ctx caddy.Context) error {
	if len(b.WriterRaw) == 0 {
		return fmt.Errorf("mediagw_buffered needs an output writer")
	}
	mod, err := ctx.LoadModule(b, "WriterRaw")
	if err != nil {
		return fmt.Errorf("loading the output of mediagw_buffered: %v", err)
	}
	b.writer = mod.(caddy.WriterOpener)
	return nil
}

func (b *BufferedWriter) String() string { return "buffered " + b.writer.String() }

// WriterKey identifies the wrapped writer with this buffering.
func (b *BufferedWriter) WriterKey() string {
	return fmt.Sprintf("mediagw_buffered:%s:%d:%d", b.writer.WriterKey(), b.interval(), b.size())
}

// OpenWriter opens the wrapped writer and starts the flushing.
func (b *BufferedWriter) OpenWriter() (io.WriteCloser, error) {
	w, err := b.writer.OpenWriter()
	if err != nil {
		return nil, err
	}
	bw := newBufferedLog(w, b.size())
	go bw.flushEvery(b.interval())
	return bw, nil
}

func (b *BufferedWriter) interval() time.Duration {
	if b.FlushInterval > 0 {
		return time.Duration(b.FlushInterval)
	}
	return DefaultBufferFlush
}

func (b *BufferedWriter) size() int {
	if b.BufferSize > 0 {
		return b.BufferSize
	}
	return DefaultBufferSize
}

// UnmarshalCaddyfile sets up the writer. Syntax:
//
//	output mediagw_buffered {
//		flush_interval <duration>
//		buffer_size    <size>
//		output <writer> [<args...>] [{ … }]
//	}
func (b *BufferedWriter) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // writer name
	if d.NextArg() {
		return d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"flush_interval": func() error { return durationArg(d, &b.FlushInterval) },
		"buffer_size": func() error {
			var n int64
			if err := sizeArg(d, &n); err != nil {
				return err
			}
			b.BufferSize = int(n)
			return nil
		},
		"output": func() error {
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			var wo caddy.WriterOpener
			switch name {
			case "stdout":
				wo = caddy.StdoutWriter{}
			case "stderr":
				wo = caddy.StderrWriter{}
			case "discard":
				wo = caddy.DiscardWriter{}
			default:
				unm, err := caddyfile.UnmarshalModule(d, "caddy.logging.writers."+name)
				if err != nil {
					return err
				}
				var ok bool
				if wo, ok = unm.(caddy.WriterOpener); !ok {
					return d.Errf("module %s is not a log writer", name)
				}
			}
			b.WriterRaw = caddyconfig.JSONModuleObject(wo, "output", name, nil)
			return nil
		},
	})
	if err != nil {
		return err
	}
	if len(b.WriterRaw) == 0 {
		return d.Err("mediagw_buffered needs an output")
	}
	return nil
}

// bufferedLog is an open buffered writer. Bytes the wrapped writer did not take stay buffered
// and are written again at the next flush, so a passing failure (a full disk, a network writer
// reconnecting) loses nothing; only past maxPending buffered bytes are new entries refused,
// with the writer's error, which the logger reports.
type bufferedLog struct {
	mu   sync.Mutex
	out  io.WriteCloser
	buf  []byte
	size int // flush when an entry would take the buffer past it
	stop chan struct{}
	done chan struct{}
}

// maxPendingFactor bounds what a failing output may leave buffered: maxPendingFactor × size.
const maxPendingFactor = 16

func newBufferedLog(out io.WriteCloser, size int) *bufferedLog {
	return &bufferedLog{out: out, buf: make([]byte, 0, size), size: size, stop: make(chan struct{}), done: make(chan struct{})}
}

func (l *bufferedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf)+len(p) > l.size {
		if err := l.flush(); err != nil && len(l.buf)+len(p) > maxPendingFactor*l.size {
			return 0, err
		}
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// flush writes the buffer, keeping what the wrapped writer did not take. Call it with mu held.
func (l *bufferedLog) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	n, err := l.out.Write(l.buf)
	l.buf = l.buf[:copy(l.buf, l.buf[n:])]
	return err
}

func (l *bufferedLog) flushEvery(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			// A failure keeps the bytes for the next tick; Write returns the error once the
			// buffer is full, and the logger reports it then.
			_ = l.flush()
			l.mu.Unlock()
		}
	}
}

// Close writes what is buffered and closes the wrapped writer.
func (l *bufferedLog) Close() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	flushErr := l.flush()
	if err := l.out.Close(); err != nil {
		return err
	}
	return flushErr
}

// Interface guards
var (
	_ caddy.Provisioner     = (*BufferedWriter)(nil)
	_ caddy.WriterOpener    = (*BufferedWriter)(nil)
	_ caddyfile.Unmarshaler = (*BufferedWriter)(nil)
)
