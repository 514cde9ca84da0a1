package videotask

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// content.last_frame_url is in the answer only when the create asked for it with
// return_last_frame (spec §2.5), even from an upstream that sends it anyway, in whatever case;
// a member read as it (in any case) that is no result address ("x") is never (resultContent).
func TestLastFrameOnlyWhenAsked(t *testing.T) {
	var next atomic.Int64
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"id":"cgt-`+string(rune('a'+next.Add(1)))+`"}`)
			return
		}
		io.WriteString(w, `{"id":"`+strings.TrimPrefix(r.URL.Path, "/api/v3/contents/generations/tasks/")+
			`","status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4","last_frame_url":"https://cdn.example.com/f.png","Last_Frame_URL":"x"}}`)
	})
	h := newHandler(t, up.URL, nil)
	for _, tc := range []struct {
		option string
		want   bool
	}{{``, false}, {`,"return_last_frame":false`, false}, {`,"return_last_frame":true`, true}} {
		w := serve(h, "POST", createPath, `{"model":"m","content":[{"type":"text","text":"a cat"}]`+tc.option+`}`)
		created := decode(t, w)
		id, _ := created["id"].(string)
		if w.Code != http.StatusOK || id == "" {
			t.Fatalf("create%s: %d %s", tc.option, w.Code, w.Body)
		}
		w = serve(h, "GET", createPath+"/"+id, "")
		content, _ := decode(t, w)["content"].(map[string]any)
		_, has := content["last_frame_url"]
		_, hasOtherCase := content["Last_Frame_URL"]
		if content["video_url"] == nil || has != tc.want || hasOtherCase {
			t.Fatalf("create%s: the answer's content is %v (last frame wanted: %v)", tc.option, content, tc.want)
		}
	}
}
