package videotask

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// panickyLocator is an adaptor whose lookup panics (a bug met on one provider's odd answer).
type panickyLocator struct{ adaptor.Adaptor }

func (panickyLocator) Locate(context.Context, adaptor.Caller, string) (string, error) {
	panic("an adaptor's bug on an odd answer")
}

// A panic in one content read's lookup must stay that request's, answered 502 (net/http
// recovers a handler's panic, but the shared lookup runs on a goroutine of its own): the process,
// and every other request it serves, must live on. Run in a child process, which the panic would
// end.
func TestPanickingContentLookupLeavesTheProcess(t *testing.T) {
	if os.Getenv("MEDIAGW_PANICKY_LOOKUP") == "1" {
		func() {
			defer func() { _ = recover() }() // what net/http does for a handler
			h := &Handler{}
			u := &providers.Upstream{Name: "a"}
			_, err := h.locateShared(context.Background(), contentCaller{caller{u: u}}, panickyLocator{}, u,
				storage.Task{ID: "cgt-1", Account: "alice", UpstreamID: "up-1"})
			if e := (*apierror.Error)(nil); !errors.As(h.contentError(u, err), &e) || e.Status != http.StatusBadGateway {
				fmt.Printf("the panicking lookup answered %v; want a 502\n", err)
				os.Exit(3)
			}
		}()
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanickingContentLookupLeavesTheProcess$")
	cmd.Env = append(os.Environ(), "MEDIAGW_PANICKY_LOOKUP=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a content read whose lookup panicked ended the whole process (%v):\n%.600s", err, out)
	}
}
