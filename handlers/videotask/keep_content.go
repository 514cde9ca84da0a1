package videotask

import (
	"encoding/json"
	"strings"
)

// withContentURLs is a task answer whose content has urls (video_url, last_frame_url: the kept
// objects' addresses) in place of the provider's, or ok false when the answer or its content is
// not a JSON object. The content's other members stay as they are, whatever their JSON type (a
// provider may add numbers or objects to it); a member whose name differs from one of urls' only
// by letter case is dropped, so that no provider address stays beside a kept one (a case-blind
// decoder would read either).
func withContentURLs(answerJSON json.RawMessage, urls map[string]string) (json.RawMessage, bool) {
	var answer, content map[string]json.RawMessage
	if json.Unmarshal(answerJSON, &answer) != nil || json.Unmarshal(answer["content"], &content) != nil || content == nil {
		return nil, false
	}
	for name := range content {
		for field := range urls {
			if name != field && strings.EqualFold(name, field) {
				delete(content, name)
			}
		}
	}
	for field, u := range urls {
		content[field] = mustJSON(u)
	}
	answer["content"] = mustJSON(content)
	return mustJSON(answer), true
}

// answerContent is a task answer's content members, nil when the answer or its content is not a
// JSON object.
func answerContent(answerJSON json.RawMessage) map[string]json.RawMessage {
	var answer struct {
		Content map[string]json.RawMessage `json:"content"`
	}
	if json.Unmarshal(answerJSON, &answer) != nil {
		return nil
	}
	return answer.Content
}
