// Command rss measures how much the gateway's resident memory grows while a large body passes
// through it, in one of two modes:
//
//   - upload: one multipart upload, generated as it is sent, with the model field after the file
//     (the case in which mediagw_route must read, and spool, the whole file before it knows the
//     model);
//
//   - sse: one long SSE answer, served by this program as the upstream on -listen, read by this
//     program through the gateway.
//
//     rss -url http://127.0.0.1:19104/v1/audio/transcriptions -key mg-… -model whisper -pid 1234 -size 209715200
//     rss -mode sse -listen 127.0.0.1:19105 -url http://127.0.0.1:19104/v1/chat/completions -key mg-… -model sse -pid 1234 -size 209715200
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
	size := flag.Int64("size", 200<<20, "file size (upload) or stream size (sse) in bytes")
	mode := flag.String("mode", "upload", "upload or sse")
	listen := flag.String("listen", "127.0.0.1:19105", "address of the SSE upstream (sse mode)")
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

	if *mode == "sse" {
		serveSSE(*listen, *size)
		n, elapsed := readSSE(*url, *key, *model)
		close(stop)
		fmt.Printf("%-34s %d MiB in %.1fs through the gateway\n", "sse stream", n>>20, elapsed.Seconds())
		fmt.Printf("%-34s before %d MiB, peak %d MiB, growth %.1f MiB\n", "gateway RSS", before/1024, peak.Load()/1024, float64(peak.Load()-before)/1024)
		return
	}

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

// serveSSE starts an upstream that answers every request with size bytes of SSE events.
func serveSSE(addr string, size int64) {
	event := []byte("data: " + strings.Repeat("x", 1014) + "\n\n") // 1 KiB per event
	go func() {
		log.Fatal(http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			flusher := w.(http.Flusher)
			for sent := int64(0); sent < size; sent += int64(len(event)) {
				if _, err := w.Write(event); err != nil {
					return
				}
				if sent%(64<<10) == 0 {
					flusher.Flush()
				}
			}
		})))
	}()
	time.Sleep(200 * time.Millisecond)
}

// readSSE reads a whole streamed answer through the gateway.
func readSSE(url, key, model string) (int64, time.Duration) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[]}`))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		log.Fatalf("stream answered %d: %s", resp.StatusCode, b)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	return n, time.Since(start)
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
