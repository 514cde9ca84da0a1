package videotask

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/storage"
)

// resultContent is the content of an answer that says succeeded, as the client is answered it,
// or ok false when the answer names no result that a client can fetch: such an answer is not a
// success here (queryResult shows it running, and the task expires as overdue if no result ever
// comes). A result is named by content.video_url, a string that is a result address
// (resultAddress), with no other member that a case-blind decoder reads as video_url (the Ark Go
// SDK's decoder and the gateway's own reads of a result, keep_copy.go and the front's content,
// are encoding/json's), and a last_frame_url that is a string or null. The content's other
// members that the Ark SDK's Content declares are fitted to their types (answer_types.go); a last
// frame that is no result address is left out, and so is any last frame of a task whose create
// did not ask for one (spec §2.5), also where the upstream sends it anyway.
func resultContent(content json.RawMessage, t storage.Task) (json.RawMessage, bool) {
	var members map[string]json.RawMessage
	if len(content) == 0 || content[0] != '{' || json.Unmarshal(content, &members) != nil {
		return nil, false
	}
	if video, ok := jsonString(members["video_url"]); !ok || !resultAddress(video, t) {
		return nil, false
	}
	for name, v := range members {
		switch {
		case name == "video_url":
		case strings.EqualFold(name, "video_url"):
			return nil, false
		case strings.EqualFold(name, "last_frame_url"):
			frame, ok := jsonString(v)
			if !ok {
				return nil, false // a last frame of another type: not a result the clients can read
			}
			if t.NoLastFrame || !resultAddress(frame, t) {
				delete(members, name)
			}
		default:
			if m := taskContentType.member(name); m != nil {
				if fitted, ok := m.fit(v); ok {
					members[name] = fitted
				} else {
					delete(members, name)
				}
			}
		}
	}
	boundMembers(members, contentContract, taskContentType)
	return plainJSON(members), true
}

// resultAddress reports whether s names a result that a client can fetch: an absolute http or
// https URL with a host and no user information (what upstream.Client.Open, which copies kept
// results, accepts), or, for a task made through an adaptor, the path of the task's own content
// endpoint (ContentURL without relay_base). A file: or javascript: URL, a relative path or a
// scheme-relative one is no result: the gateway never redirects a client to it nor fetches it;
// nor is an address longer than MaxResultAddress. The address is not required to be public here:
// the gateway fetches only what upstream.Client.Open fetches, which dials public addresses only
// (or the upstream's own host), and a client that follows an address dials from its own network.
func resultAddress(s string, t storage.Task) bool {
	if t.UpstreamID != "" && s == ownContentPath(t.ID) {
		return true
	}
	if len(s) > MaxResultAddress {
		return false // no URL a client or the gateway fetches; kept, it would fill the record
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Hostname() != "" && u.User == nil && u.Opaque == ""
}

// ownContentPath is the path of a task's owner-only content endpoint.
func ownContentPath(taskID string) string {
	return "/api/v3/" + TasksPath + "/" + url.PathEscape(taskID) + "/content"
}

// resultMissing is the answer (result, running) of a task whose provider reports success
// without a result (resultContent): past the task's execution_expires_after (the contract's
// default when the record keeps none) the provider will not name one any more, so the task
// expires, with the code result_missing, and is refunded as any expired task (by whoever stores
// the change, see answerChange.apply); until then it stays running.
func (h *Handler) resultMissing(result answerFields, t storage.Task) (answerFields, string) {
	r, err := canonicalRequest(t)
	if err != nil || !h.now().After(executionDeadline(t, r)) {
		return result, StatusRunning
	}
	out := make(answerFields, 0, len(result))
	for _, f := range result {
		switch f.name {
		case "status":
			f.value = statusJSON[StatusExpired]
		case "error":
			f.value = mustJSON(map[string]string{"code": "result_missing",
				"message": "the provider reported the task succeeded but named no result address (content.video_url, an absolute http or https URL) before execution_expires_after"})
		}
		out = append(out, f)
	}
	return out, StatusExpired
}
