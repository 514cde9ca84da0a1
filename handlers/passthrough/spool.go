package passthrough

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// errSpoolFull is a body past the spool's bound (413).
var errSpoolFull = errors.New("the body is larger than the spool bound")

// spool keeps the bytes read from a request body while it is checked: in memory up to memLimit,
// then in a temporary file, at most maxSize in all. The file is unlinked as soon as it is created,
// so it disappears from the directory at once and its space is freed by Close, whatever happens
// to the request.
type spool struct {
	memLimit int64
	maxSize  int64
	dir      string
	mem      bytes.Buffer
	file     *os.File
	size     int64
}

func (s *spool) Write(p []byte) (int, error) {
	if s.size+int64(len(p)) > s.maxSize {
		return 0, errSpoolFull
	}
	if s.file == nil && int64(s.mem.Len()+len(p)) > s.memLimit {
		f, err := os.CreateTemp(s.dir, "mediagw-spool-*")
		if err != nil {
			return 0, err
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return 0, err
		}
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			f.Close()
			return 0, err
		}
		s.mem = bytes.Buffer{}
		s.file = f
	}
	s.size += int64(len(p))
	if s.file != nil {
		return s.file.Write(p)
	}
	return s.mem.Write(p)
}

// reader replays what was written.
func (s *spool) reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem.Bytes()), nil
	}
	return io.NewSectionReader(s.file, 0, s.size), nil
}

// Close frees the spool: the temporary file's space goes back to the system.
func (s *spool) Close() error {
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}

// replayBody is a request body replayed from the spool; closing it closes the original.
type replayBody struct {
	io.Reader
	io.Closer
}

// Interface guards
var (
	_ io.WriteCloser = (*spool)(nil)
	_ io.ReadCloser  = replayBody{}
)
