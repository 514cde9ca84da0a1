package dashscope

import "strings"

// sizes are the text-to-video pixel sizes (parameters.size, "width*height") that DashScope's
// reference lists, by the contract's resolution and ratio.
var sizes = map[string]map[string]string{
	"480p": {"16:9": "832*480", "9:16": "480*832", "1:1": "624*624"},
	"720p": {"16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088"},
	"1080p": {"16:9": "1920*1080", "9:16": "1080*1920", "1:1": "1440*1440", "4:3": "1632*1248",
		"3:4": "1248*1632"},
}

// pixelSize is the size for a resolution and ratio; a ratio not given (or adaptive) is 16:9, a
// resolution not given leaves the size to the model.
func pixelSize(resolution, ratio string) (string, bool) {
	bySize, ok := sizes[strings.ToLower(resolution)]
	if !ok {
		return "", false
	}
	if s, ok := bySize[ratio]; ok {
		return s, true
	}
	return bySize["16:9"], true
}
