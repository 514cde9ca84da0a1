package integration

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// splitImageStreamCaddyfile serves gpt-image-split, priced by its images, from a fake OpenAI
// image upstream ({{up_url}}), through the README's pass-through site.
const splitImageStreamCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models gpt-image-split
		}
		price gpt-image-split {
			image 0.04
			image 1024x1024 low 0.01
			image 1024x1024 high 0.17
		}
		key mg-split-images {
			account split-images
		}
	}
}

` + readmePassThroughSite

// TestSplitImageEventIsCharged: an image stream whose image_generation.completed event comes over
// two data lines (the SSE format joins an event's data lines with a line feed, and openai-go reads
// them so, as one image) is charged that image at the quality it reports, 0.01 of the 0.17 held,
// as a one-line event is. Before, each data line was read alone, neither was a whole event, and
// the stream was released as one that made no image: the image was free.
func TestSplitImageEventIsCharged(t *testing.T) {
	up := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: image_generation.completed\r\ndata: {\"type\":\"image_generation.completed\",\"b64_json\":\"QUJD\",\"created_at\":1,\r\n"+
			"data: \"size\":\"1024x1024\",\"quality\":\"low\",\"background\":\"opaque\",\"output_format\":\"png\","+
			"\"usage\":{\"total_tokens\":100,\"input_tokens\":50,\"output_tokens\":50,\"input_tokens_details\":{\"text_tokens\":10,\"image_tokens\":40}}}\r\n\r\n")
	})).URL
	base, g := startSimGateway(t, splitImageStreamCaddyfile, map[string]string{"up_url": up})
	keysEnv{g: g, base: base}.credit(t, "split-images", "10", "split-images-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-split-images"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	from := len(ledgerEntries(t, g, "split-images"))
	stream := oa.Images.GenerateStreaming(ctx, openai.ImageGenerateParams{Model: "gpt-image-split", Prompt: "a lighthouse",
		Size: openai.ImageGenerateParamsSize1024x1024, Quality: openai.ImageGenerateParamsQualityAuto})
	images := 0
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "image_generation.completed" && ev.B64JSON == "QUJD" && ev.Quality == "low" {
			images++
		}
	}
	if err := stream.Err(); err != nil || images != 1 {
		t.Fatalf("%d images read, %v", images, err)
	}
	if held, end := toolEnded(t, g, "split-images", from); held != "0.17" || end != "settle 0.01" {
		t.Errorf("held %s, %s; want held 0.17, settle 0.01", held, end)
	}
}
