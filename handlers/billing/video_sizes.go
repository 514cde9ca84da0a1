package billing

// videoSize is a video's pixel size.
type videoSize struct{ Width, Height int64 }

// videoSizes are the output sizes of Ark's Seedance models per resolution and ratio, as the
// provider publishes them in its video generation reference; a token-priced model's estimate
// uses them (with 24 fps, Seedance's frame rate). The 4k row is not an Ark size (Seedance 1.x
// stops at 1080p): it is the UHD size of each ratio, with the contract's image sizes where
// they exist (3840x2160, 2880x2880, 3328x2496), so that a 4k task is never held too little.
//
// Checked against public copies of Ark's tables (2026-11): the 480p and 720p rows, with their
// token counts at 24 fps (864×480×24×5/1024 = 48,600; 1248×704×24×5/1024 = 102,960), against
// the Seedance pricing table reproduced at https://302ai-en.apifox.cn/305958132e0; the 1080p
// row (1920×1088, 1664×1248, 1440×1440, 1248×1664, 1088×1920, 2176×928) against the Seedance
// 1.0 Pro dimension table at https://runware.ai/docs/models/bytedance-seedance-1-0-pro. Note
// that Ark's 1080p 16:9 is 1920×1088, not 1920×1080: its token formula's worked example
// (1920×1080×24×5/1024 = 243,000) is the formula's, not a size a task is held at.
var videoSizes = map[string]map[string]videoSize{
	"480p": {
		"16:9": {864, 480}, "4:3": {736, 544}, "1:1": {640, 640},
		"3:4": {544, 736}, "9:16": {480, 864}, "21:9": {960, 416},
	},
	"720p": {
		"16:9": {1248, 704}, "4:3": {1120, 832}, "1:1": {960, 960},
		"3:4": {832, 1120}, "9:16": {704, 1248}, "21:9": {1504, 640},
	},
	"1080p": {
		"16:9": {1920, 1088}, "4:3": {1664, 1248}, "1:1": {1440, 1440},
		"3:4": {1248, 1664}, "9:16": {1088, 1920}, "21:9": {2176, 928},
	},
	"4k": {
		"16:9": {3840, 2160}, "4:3": {3328, 2496}, "1:1": {2880, 2880},
		"3:4": {2496, 3328}, "9:16": {2160, 3840}, "21:9": {5040, 2160},
	},
}

// Contract defaults of a video task (spec §2.2) and the frame rate of the estimates.
const (
	DefaultResolution = "720p"
	DefaultRatio      = "16:9"
	DefaultDuration   = 5
	DefaultFPS        = 24
)

// sizeOf is the pixel size of a resolution and ratio. An empty or unknown resolution counts as
// the contract's default, 720p; an empty or unknown ratio, or "adaptive" (the model chooses),
// counts as the ratio of that resolution with the most pixels, so that an estimate is an upper
// bound.
func sizeOf(resolution, ratio string) videoSize {
	byRatio, ok := videoSizes[resolution]
	if !ok {
		byRatio = videoSizes[DefaultResolution]
	}
	if s, ok := byRatio[ratio]; ok {
		return s
	}
	var largest videoSize
	for _, s := range byRatio {
		if s.Width*s.Height > largest.Width*largest.Height {
			largest = s
		}
	}
	return largest
}
