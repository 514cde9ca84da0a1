package usage

import (
	"strings"
	"testing"
)

// TestImageEventsCountsStreamedImages: the completed and partial images of OpenAI's image
// generation and edit streams are counted, and the size and quality of the last completed one
// kept, however the stream is cut into writes and whichever line ends it uses, an event's JSON
// over one data line or several; an event cut short, a type nested or inside a string, a non-data
// line and an error are not counted.
func TestImageEventsCountsStreamedImages(t *testing.T) {
	big := strings.Repeat("QUJD", 100_000)
	partial := func(kind string, i int) string {
		return "event: " + kind + "\ndata: {\"type\":\"" + kind + "\",\"b64_json\":\"" + big + "\",\"created_at\":1,\"size\":\"1024x1024\",\"quality\":\"auto\",\"background\":\"opaque\",\"output_format\":\"png\",\"partial_image_index\":" + string(rune('0'+i)) + "}\n\n"
	}
	completed := func(kind, size, quality string) string {
		return "event: " + kind + "\ndata: {\"type\":\"" + kind + "\",\"b64_json\":\"" + big + "\",\"created_at\":1,\"size\":\"" + size + "\",\"quality\":\"" + quality + "\",\"background\":\"opaque\",\"output_format\":\"png\",\"usage\":{\"total_tokens\":100,\"input_tokens\":50,\"output_tokens\":50,\"input_tokens_details\":{\"text_tokens\":10,\"image_tokens\":40}}}\n\n"
	}
	for _, tc := range []struct {
		name                string
		stream              string
		completed, partials int64
		size, quality       string
	}{
		{"generation", partial(ImageGenerationPartial, 0) + partial(ImageGenerationPartial, 1) + completed(ImageGenerationCompleted, "1024x1536", "low"), 1, 2, "1024x1536", "low"},
		{"edit, CRLF", strings.ReplaceAll(partial(ImageEditPartial, 0)+completed(ImageEditCompleted, "1024x1024", "high"), "\n", "\r\n"), 1, 1, "1024x1024", "high"},
		{"two images, bare CR", strings.ReplaceAll(completed(ImageGenerationCompleted, "1024x1024", "medium")+completed(ImageGenerationCompleted, "1536x1024", "high"), "\n", "\r"), 2, 0, "1536x1024", "high"},
		{"partials only", partial(ImageGenerationPartial, 0) + partial(ImageGenerationPartial, 1), 0, 2, "", ""},
		{"cut in a completed event", partial(ImageGenerationPartial, 0) + completed(ImageGenerationCompleted, "1024x1024", "low")[:5000] + "\n\n", 0, 1, "", ""},
		{"error", "event: error\ndata: {\"error\":{\"type\":\"image_generation_user_error\",\"code\":\"moderation_blocked\",\"message\":\"no\"}}\n\n", 0, 0, "", ""},
		{"nested or quoted type", "data: {\"event\":{\"type\":\"image_generation.completed\"},\"note\":\"\\\"type\\\":\\\"image_generation.completed\\\"\"}\n\n", 0, 0, "", ""},
		{"not a data line", "event: image_generation.completed\n: {\"type\":\"image_generation.completed\"}\nxdata: {\"type\":\"image_generation.completed\"}\n\n", 0, 0, "", ""},
		{"unfinished last line", "data: {\"type\":\"image_generation.completed\",\"size\":\"1024x1024\"}", 0, 0, "", ""},
		// An event's data lines are one event's data, joined with a line feed, as a client reads
		// them; a blank line ends an event whose data never made a whole object.
		{"an event over two data lines", strings.Replace(completed(ImageGenerationCompleted, "1024x1024", "low"), `,"size"`, ",\ndata: \"size\"", 1), 1, 0, "1024x1024", "low"},
		{"an event over two data lines, CRLF", strings.ReplaceAll(strings.Replace(completed(ImageEditCompleted, "1024x1024", "high"), `,"size"`, ",\ndata: \"size\"", 1), "\n", "\r\n"), 1, 0, "1024x1024", "high"},
		{"an event over three data lines, bare CR, a comment between", "data: {\"type\":\rdata: \"image_generation.completed\",\r: note\rdata: \"size\":\"1024x1024\",\"quality\":\"low\"}\r\r", 1, 0, "1024x1024", "low"},
		{"a broken event ended, then a whole one", "data: {\"type\":\"image_generation.completed\",\n\n" + completed(ImageGenerationCompleted, "1024x1024", "medium"), 1, 0, "1024x1024", "medium"},
		// Ark's Seedream stream: each partial_succeeded is an image, its completed the end.
		{"Ark, three images", arkSucceeded(0, "2048x2048") + arkSucceeded(1, "2048x2048") + arkSucceeded(2, "2304x1728") + arkCompleted(3), 3, 0, "2304x1728", ""},
		{"Ark, one failed", arkSucceeded(0, "2048x2048") + "event: image_generation.partial_failed\ndata: {\"type\":\"image_generation.partial_failed\",\"model\":\"seedream\",\"created\":1,\"image_index\":1,\"error\":{\"code\":\"OutputImageSensitiveContentDetected\",\"message\":\"no\"}}\n\n" + arkCompleted(1), 1, 0, "2048x2048", ""},
		{"Ark, left before its end", arkSucceeded(0, "2048x2048") + arkSucceeded(1, "2048x2048"), 2, 0, "2048x2048", ""},
	} {
		for _, chunk := range []int{1, 7, 4096, len(tc.stream)} {
			if chunk == 1 && len(tc.stream) > 100_000 {
				continue
			}
			var e ImageEvents
			for i := 0; i < len(tc.stream); i += chunk {
				e.Write([]byte(tc.stream[i:min(i+chunk, len(tc.stream))]))
			}
			size, quality := e.Reported()
			if e.Completed() != tc.completed || e.Partials() != tc.partials || size != tc.size || quality != tc.quality {
				t.Errorf("%s in writes of %d: %d completed, %d partial, %q %q; want %d, %d, %q %q", tc.name, chunk,
					e.Completed(), e.Partials(), size, quality, tc.completed, tc.partials, tc.size, tc.quality)
			}
		}
	}
}

// arkSucceeded and arkCompleted are events of Ark's Seedream image stream.
func arkSucceeded(i int, size string) string {
	return "event: image_generation.partial_succeeded\ndata: {\"type\":\"image_generation.partial_succeeded\",\"model\":\"doubao-seedream-4-0-250828\",\"created\":1757396757,\"image_index\":" +
		string(rune('0'+i)) + ",\"url\":\"https://ark-content.example.com/" + string(rune('0'+i)) + ".jpeg\",\"size\":\"" + size + "\"}\n\n"
}

func arkCompleted(images int) string {
	return "event: image_generation.completed\ndata: {\"type\":\"image_generation.completed\",\"model\":\"doubao-seedream-4-0-250828\",\"created\":1757396800,\"usage\":{\"generated_images\":" +
		string(rune('0'+images)) + ",\"output_tokens\":16384,\"total_tokens\":16384}}\n\ndata: [DONE]\n\n"
}
