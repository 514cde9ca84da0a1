package passthrough

import (
	"encoding/json"
	"slices"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// A remix (POST /v1/videos/{id}/remix) makes a new video of its source's length and picture.
// So that its hold is an upper bound of what it costs, each video that pass-through creates (a
// POST /v1/videos, or a remix) is recorded with its length and picture (storage.Task.Usage, a
// billing.Usage in JSON: seconds, resolution, ratio; in a record written before the record
// carried the create's hold, storage.Task.HoldUsage as billing encodes it), and a remix is held
// at its source's
// (billing.Price.EstimateRemix): a length not known at the model's max_seconds, a picture not
// known at the resolution that costs the most.

// videoMade is the length and picture of the video a create made, for its record: what the create
// asked for (sizing: the seconds or duration, size or resolution and ratio it named; for a remix,
// its source's), and for what it left out, what its answer reports (OpenAI's video object has
// its seconds and size). Only a contract resolution and ratio are kept; what is not known is zero.
func videoMade(sizing billing.Request, answer []byte) billing.Usage {
	var made billing.Usage
	switch {
	case sizing.Video != nil:
		if d := sizing.Video.Duration; d != nil && *d > 0 {
			made.VideoSeconds = *d
		}
		if f := sizing.Video.Frames; f > 0 { // longer than the length named (see videoSizing)
			made.VideoSeconds = framesSeconds(f)
		}
		made.Resolution, made.Ratio = sizing.Video.Resolution, sizing.Video.Ratio
		if sizing.Video.Planned.Resolution != "" {
			made.Resolution = "" // it named two: the answer's, else not known
		}
	case sizing.Remix != nil:
		made.VideoSeconds, made.Resolution, made.Ratio = sizing.Remix.VideoSeconds, sizing.Remix.Resolution, sizing.Remix.Ratio
	}
	made = contractPicture(made)
	if made.VideoSeconds > 0 && made.Resolution != "" && made.Ratio != "" {
		return made
	}
	fields, err := readFields(answer, videoPricedFields)
	if err != nil {
		return made // no JSON object: nothing reported
	}
	reported := videoSizing(jsonVideoValue(&fields))
	if made.VideoSeconds == 0 && reported.Duration != nil && *reported.Duration > 0 {
		made.VideoSeconds = *reported.Duration
	}
	if made.Resolution == "" {
		made.Resolution = reported.Resolution
	}
	if made.Ratio == "" {
		made.Ratio = reported.Ratio
	}
	return contractPicture(made)
}

// contractPicture is u without a resolution or a ratio that the contract does not name.
func contractPicture(u billing.Usage) billing.Usage {
	if !slices.Contains(billing.Resolutions, u.Resolution) {
		u.Resolution = ""
	}
	known := false
	for _, r := range adaptor.Ratios {
		known = known || r.Name == u.Ratio
	}
	if !known {
		u.Ratio = ""
	}
	return u
}

// madeRecord is a video's length and picture as its record keeps them (storage.Task.Usage).
func madeRecord(made billing.Usage) json.RawMessage {
	b, err := json.Marshal(made)
	if err != nil {
		return nil // a billing.Usage always encodes
	}
	return b
}

// sourceMade is the length and picture the record of a video keeps (see madeRecord): in its
// Usage, or, in a record written before its create's hold was carried by it (no HoldID), in its
// HoldUsage. What does not read is not known.
func sourceMade(source storage.Task) billing.Usage {
	var u billing.Usage
	var err error
	switch {
	case len(source.Usage) > 0:
		err = json.Unmarshal(source.Usage, &u)
	case source.HoldID == "":
		u, err = billing.DecodeUsage(source.HoldUsage)
	}
	if err != nil {
		return billing.Usage{} // not known: held at the upper bound
	}
	return u
}

// Fields read of the body of a call on an existing object: a body may not name another model;
// a remix's is read for the length and picture it names too, under jsonkeys' rule as a create's.
var (
	objectBodyFields = []string{"model", methodField}
	remixBodyFields  = append([]string{"model", methodField}, videoPricedFields...)
)

// remixSizing is what a remix of the video source is held at (see billing.Request.Remix): the
// length and picture its record keeps (see videoMade); nothing known when the record keeps none
// (a record written before they were kept), or they do not read. OpenAI's remix takes a prompt
// alone, but asked, the length and picture the remix's body names (nil: no body), may differ
// from the source's, and the gateway cannot know which of the two a provider follows: the
// longer length is held, and a picture other than the source's is not known (the costliest).
func remixSizing(source storage.Task, asked *billing.VideoTask) billing.Request {
	u := sourceMade(source)
	held := contractPicture(billing.Usage{VideoSeconds: max(u.VideoSeconds, 0), Resolution: u.Resolution, Ratio: u.Ratio})
	if asked != nil {
		if d := asked.Duration; d != nil && held.VideoSeconds > 0 {
			held.VideoSeconds = max(held.VideoSeconds, *d, asked.Planned.Seconds) // one that names no length (0, -1) leaves the source's
		}
		if f := asked.Frames; f > 0 && held.VideoSeconds > 0 { // frames longer than its length (see videoSizing)
			held.VideoSeconds = max(held.VideoSeconds, framesSeconds(f))
		}
		if asked.Resolution != "" && asked.Resolution != held.Resolution || asked.Planned.Resolution != "" {
			held.Resolution = ""
		}
		if asked.Ratio != "" && asked.Ratio != held.Ratio {
			held.Ratio = ""
		}
	}
	return billing.Request{Remix: &held}
}
