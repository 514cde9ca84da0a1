package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// crashEnv names the store location in the child process of the crash test.
const crashEnv = "MEDIAGW_STORETEST_CRASH_LOCATION"

func testReopen(t *testing.T, b Backend) {
	ctx := context.Background()
	loc := b.NewLocation(t)
	s := b.Open(t, loc)
	mustCreate(t, s, newTask("cgt-reopen", "alice", 1))
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_1", Hash: storage.HashSecret("mg-1"), Account: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "acme", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddCounter(ctx, "quota/key_1", 7, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueEvent(ctx, event("reopen", time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	secret, err := s.SettingOnce(ctx, "secret", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = b.Open(t, loc)
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if got, err := s.Task(ctx, "cgt-reopen"); err != nil || got.Account != "alice" || got.Version != 1 {
		t.Fatalf("task after reopen = %+v, %v", got, err)
	}
	if got, err := s.KeyByHash(ctx, storage.HashSecret("mg-1")); err != nil || got.ID != "key_1" {
		t.Fatalf("key after reopen = %+v, %v", got, err)
	}
	if got, err := s.Account(ctx, "acme"); err != nil || !got.Disabled {
		t.Fatalf("account after reopen = %+v, %v", got, err)
	}
	if v, err := s.Counter(ctx, "quota/key_1"); err != nil || v != 7 {
		t.Fatalf("counter after reopen = %d, %v", v, err)
	}
	if n, err := s.PendingEvents(ctx); err != nil || n != 1 {
		t.Fatalf("events after reopen = %d, %v", n, err)
	}
	if again, err := s.SettingOnce(ctx, "secret", []byte("two")); err != nil || string(again) != string(secret) {
		t.Fatalf("setting after reopen = %q, %v", again, err)
	}
}

// testDurableAcrossCrash runs a child process that writes as fast as it can and prints each
// write once it is acknowledged, kills it with SIGKILL in the middle, and checks that every
// acknowledged write is there when the store is opened again.
func testDurableAcrossCrash(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	run := "^" + strings.SplitN(t.Name(), "/", 2)[0] + "$/^DurableAcrossCrash$"
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+loc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill() // the test already failed; the child must not outlive it
			_ = cmd.Wait()
		}
	}()
	acked := -1
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(2 * time.Minute)
	for lines.Scan() {
		n, ok := strings.CutPrefix(lines.Text(), "storetest-ack ")
		if !ok {
			continue
		}
		if acked, err = strconv.Atoi(n); err != nil {
			t.Fatalf("child said %q", lines.Text())
		}
		if acked >= 60 && !killed {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
		if time.Now().After(deadline) {
			t.Fatal("the child wrote too slowly")
		}
	}
	if err := cmd.Wait(); killed && err == nil {
		t.Fatal("the child exited normally before it was killed")
	}
	if !killed || acked < 60 {
		t.Fatalf("the child acknowledged only %d writes before it stopped", acked+1)
	}
	s := b.Open(t, loc)
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	for i := 0; i <= acked; i++ {
		if got, err := s.Task(ctx, fmt.Sprint("crash-", i)); err != nil || got.Account != "alice" {
			t.Fatalf("acknowledged task %d lost in the crash: %+v, %v", i, got, err)
		}
	}
	if v, err := s.Counter(ctx, "crash"); err != nil || v < int64(acked+1) {
		t.Fatalf("counter after the crash = %d, %v; at least %d were acknowledged", v, err, acked+1)
	}
	if v, err := s.Counter(ctx, "crash-reserved"); err != nil || v < int64(acked+1) {
		t.Fatalf("reservations after the crash = %d, %v; at least %d were confirmed by a later durable write", v, err, acked+1)
	}
	if n, err := s.PendingEvents(ctx); err != nil || n < acked+1 {
		t.Fatalf("events after the crash = %d, %v; at least %d were acknowledged", n, err, acked+1)
	}
}

// runCrashChild is the child process of testDurableAcrossCrash: it writes until it is killed.
func runCrashChild(t *testing.T, b Backend) bool {
	loc := os.Getenv(crashEnv)
	if loc == "" {
		return false
	}
	t.Run("DurableAcrossCrash", func(t *testing.T) {
		s := b.Open(t, loc)
		ctx := context.Background()
		stop := time.Now().Add(2 * time.Minute) // bounded, in case the parent is gone
		for i := 0; i < 1_000_000 && time.Now().Before(stop); i++ {
			// A reservation is on disk once the durable write after it is.
			if _, _, err := s.ReserveCounter(ctx, "crash-reserved", 1, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateTask(ctx, newTask(fmt.Sprint("crash-", i), "alice", int64(i))); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.AddCounter(ctx, "crash", 1, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.EnqueueEvent(ctx, event(fmt.Sprint("crash-", i), time.Now())); err != nil && !errors.Is(err, storage.ErrExists) {
				t.Fatal(err)
			}
			fmt.Printf("storetest-ack %d\n", i)
		}
	})
	return true
}
