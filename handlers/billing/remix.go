package billing

import "slices"

// EstimateRemix is the hold of a remix of a video (OpenAI's POST /v1/videos/{id}/remix), which
// makes a new video of the source's length and picture. source is the source video's length
// (VideoSeconds), resolution and ratio, as the gateway recorded them when it created the video;
// a field it does not know is zero. A length not known is held at max_seconds, a resolution not
// known (or not one of Resolutions) at the one that costs the most, and a ratio not known at the
// one with the most pixels, so that the hold is an upper bound of what the remix can cost.
func (p *Price) EstimateRemix(source Usage) Estimate {
	seconds := max(source.VideoSeconds, 0) // 0: not known, held at max_seconds (see EstimateVideo)
	t := VideoTask{Duration: &seconds, Resolution: source.Resolution, Ratio: source.Ratio}
	if t.Ratio == "" {
		t.Ratio = AdaptiveRatio // not known: the one with the most pixels
	}
	if slices.Contains(Resolutions, t.Resolution) {
		return p.EstimateVideo(t)
	}
	var costliest Estimate
	for i, resolution := range Resolutions {
		t.Resolution = resolution
		if e := p.EstimateVideo(t); i == 0 || e.Amount > costliest.Amount {
			costliest = e
		}
	}
	return costliest
}

// AdaptiveRatio is the ratio of a video whose ratio the model chooses: it is estimated at the
// ratio with the most pixels at its resolution (see sizeOf).
const AdaptiveRatio = "adaptive"
