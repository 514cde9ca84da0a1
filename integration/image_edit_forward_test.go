package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestImageEditForwardsOnlyWhatWasChecked: through a real gateway, an image edit reaches its
// OpenAI-style provider as exactly what was checked: the contract's fields, the checked
// extensions (background, output_compression), each image and the mask as their image_url
// alone. A bare Base64 image and local paths in fields the gateway does not read, at the top
// and beside an image's URL, never reach the provider (before, only URL-like strings in them
// were checked, and everything else went on as sent).
func TestImageEditForwardsOnlyWhatWasChecked(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short local body: the comparison below tells what arrived
		mu.Lock()
		got = body
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"created":1,"data":[{"url":"https://cdn.example.com/out.png"}]}`)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, imageEditSlotsCaddyfile, map[string]string{"upstream_url": provider.URL})

	const b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	r := call(t, http.MethodPost, base+"/v1/images/edits", "mg-edit-slots", `{"model":"edit-async","prompt":"make it blue",`+
		`"images":[{"image_url":"https://cdn.example.com/cat.png","bytes":"`+b64+`"}],"mask":{"image_url":"https://cdn.example.com/m.png","file":"./m.png"},`+
		`"image":"`+b64+`","reference":"/var/lib/photos/dog.png","extra":{"path":"~/cat.png"},"background":"transparent","output_compression":70}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "https://cdn.example.com/out.png") {
		t.Fatalf("edit = %d %s", r.status, r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	want := `{"background":"transparent","images":[{"image_url":"https://cdn.example.com/cat.png"}],"mask":{"image_url":"https://cdn.example.com/m.png"},` +
		`"model":"edit-async","output_compression":70,"prompt":"make it blue"}`
	if string(got) != want {
		t.Fatalf("the provider got %s\nwant %s", got, want)
	}
}
