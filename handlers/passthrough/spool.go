package passthrough

import (
	"bytes"
	"io"
	"os"
)

// spool keeps the bytes read from a request body while looking for the model: in memory up to a
// bound, then in a temporary file, so a large multipart body is never held whole in memory.
type spool struct {
	memLimit int64
	dir      string
	mem      bytes.Buffer
	file     *os.File
	size     int64
}

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && int64(s.mem.Len()+len(p)) > s.memLimit {
		f, err := os.CreateTemp(s.dir, "mediagw-spool-*")
		if err != nil {
			return 0, err
		}
		_ = os.Remove(f.Name()) // unlinked: the space is freed when the file is closed
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

func (s *spool) Close() error {
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}

// replayBody is a request body made of the spooled prefix and the rest of the original body;
// closing it closes the original.
type replayBody struct {
	io.Reader
	io.Closer
}
