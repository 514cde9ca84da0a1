package passthrough

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// mediaURLKeys name the members that hold a URL the provider fetches or calls, either as a string
// (Responses input_image.image_url, input_file.file_url, an mcp tool's server_url) or as an
// object with a url (Chat image_url, and the video_url and audio_url parts some providers take).
var mediaURLKeys = []string{"image_url", "video_url", "audio_url", "file_url", "server_url"}

// mediaURLs checks the media URLs of one object of a chat, responses or messages body (see
// media.CheckPassThroughURL): members named in mediaURLKeys, and the url of a messages content
// source ({"type":"url","url":…}) or of a messages MCP server (mcp_servers[].url, at any depth,
// so in each request of a Message Batches body too). Keys are
// matched without regard to case, so that every spelling an upstream might honour is checked.
func mediaURLs(path *jsonkeys.Path, members []jsonkeys.Member) error {
	inURLObject := path != nil && path.Index < 0 && (isMediaURLKey(path.Key) || strings.EqualFold(path.Key, "source")) ||
		path != nil && path.Index >= 0 && path.Parent != nil && path.Parent.Index < 0 && strings.EqualFold(path.Parent.Key, "mcp_servers")
	for _, m := range members {
		switch {
		case isMediaURLKey(m.Key) && len(m.Value) > 0 && m.Value[0] == '"':
		case inURLObject && strings.EqualFold(m.Key, "url"):
		default:
			continue
		}
		var raw string
		if json.Unmarshal(m.Value, &raw) != nil {
			continue // null, or not a string: nothing to fetch
		}
		if err := media.CheckPassThroughURL(raw); err != nil {
			param := member(path, m.Key).String()
			return apierror.New(http.StatusBadRequest, "invalid_request_body", param+" "+err.Error()).WithParam(param)
		}
	}
	return nil
}

func isMediaURLKey(key string) bool {
	for _, k := range mediaURLKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}
