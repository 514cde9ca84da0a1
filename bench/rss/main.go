// Command rss sends one large multipart upload through the gateway and reports how much the
// gateway's resident memory grew meanwhile. The body is generated as it is sent, with the model
// field after the file (the case in which mediagw_route must read, and spool, the whole file
// before it knows the model).
//
//	rss -url http://127.0.0.1:19104/v1/audio/transcriptions -key mg-… -model whisper -pid 1234 -size 209715200
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "gateway endpoint")
	key := flag.String("key", "", "API key")
	model := flag.String("model", "", "model id")
	pid := flag.Int("pid", 0, "gateway process id")
	size := flag.Int64("size", 200<<20, "file size in bytes")
	flag.Parse()

	before := rssKiB(*pid)
	var peak atomic.Int64
	peak.Store(before)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rssKiB(*pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", "speech.wav")
		if err == nil {
			_, err = io.CopyN(fw, pattern{}, *size)
		}
		if err == nil {
			err = mw.WriteField("model", *model)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, *url, pr)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+*key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	client := &http.Client{Timeout: 5 * time.Minute}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	close(stop)
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("upload answered %d: %s", resp.StatusCode, body)
	}
	fmt.Printf("%-34s %d MiB in %.1fs, upstream said %s\n", "upload", *size>>20, elapsed.Seconds(), strings.TrimSpace(string(body)))
	fmt.Printf("%-34s before %d MiB, peak %d MiB, growth %.1f MiB\n", "gateway RSS", before/1024, peak.Load()/1024, float64(peak.Load()-before)/1024)
}

// pattern is an endless, cheap, non-zero byte stream.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i*7 + 13)
	}
	return len(p), nil
}

// rssKiB reads VmRSS of a process from /proc.
func rssKiB(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}
