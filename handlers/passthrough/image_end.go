package passthrough

import (
	"bytes"
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// An image task (an image generation passed through, or an edit through mediagw_image_edits,
// that the provider answers with a task id and no image) is charged by how it ended, as a video
// is (see video_end.go and accounting.Accountant.ObjectFinished): its record carries its
// create's hold, and the change that marks the record finished decides, once, whoever stores it:
//
//   - a query (GET /v1/images/tasks/{id}) answered 2xx with the top-level status completed or
//     succeeded settles the hold at the images the answer reports (ImageTaskReported), as a
//     synchronous image answer is settled;
//   - one with the status failed, cancelled, canceled or expired releases it in full;
//   - a task whose end nobody sees is settled at its estimate when its lease (DefaultSlotLease
//     after its create) has ended: by EndLapsedSlots or by LapsedHeldObjects.

// recordCarriesHold reports whether the record of an object of kind that a create made, whose
// answer was answer (nil when it was not held whole), carries the create's hold: a video's or a
// video generation's, and an image task's (imageTaskAnswer).
func recordCarriesHold(kind string, answer []byte) bool {
	return carriesCreateHold(kind) && (kind != storage.KindImage || imageTaskAnswer(answer))
}

// imageTaskAnswer reports whether answer, an image generation's answer held whole (nil when it
// was not: a stream), is a task's: a JSON object without a top-level data (or with data null).
// An answer that has data and an id too is a synchronous one, settled with its request: at its
// images, or released when data is empty.
func imageTaskAnswer(answer []byte) bool {
	if answer == nil {
		return false
	}
	fields, err := readFields(answer, []string{"data"})
	if err != nil {
		return false
	}
	data := fields.value("data")
	return data == nil || string(bytes.TrimSpace(data)) == "null"
}

// imageReportedFields are the top-level members of an image task's answer that price it.
var imageReportedFields = []string{"data", "size", "quality"}

// ImageTaskReported is what answer, the answer of a query that showed the image task t finished,
// reports it made, when t's status is completed or succeeded; else nothing. It is the number of
// items in the answer's top-level data, and the size and quality the answer reports at its top
// level (billing.AnswerImage), as a synchronous image answer is read. An edit's task is charged at
// most the images its edit asked for (ImageTaskAsked, kept in its record). An answer whose
// members repeat, or that has no item in data, reports nothing: its estimate is charged.
func ImageTaskReported(t storage.Task, answer []byte) billing.Usage {
	if t.Kind != storage.KindImage || (t.Status != "completed" && t.Status != "succeeded") {
		return billing.Usage{}
	}
	fields, err := readFields(answer, imageReportedFields)
	if err != nil {
		return billing.Usage{}
	}
	var data []json.RawMessage
	if json.Unmarshal(fields.value("data"), &data) != nil {
		data = nil
	}
	var size, quality string
	if json.Unmarshal(fields.value("size"), &size) != nil {
		size = ""
	}
	if json.Unmarshal(fields.value("quality"), &quality) != nil {
		quality = ""
	}
	return imageTaskMade(t, int64(len(data)), size, quality)
}

// imageTaskMade is what the image task t made when the answer that showed it finished has n items
// in its data and reports size and quality: nothing unless t's status is completed or
// succeeded, at most the images its record says its create asked for (askedImages).
func imageTaskMade(t storage.Task, n int64, size, quality string) billing.Usage {
	if t.Kind != storage.KindImage || (t.Status != "completed" && t.Status != "succeeded") {
		return billing.Usage{}
	}
	u := billing.Usage{Images: n}
	u.ImageSize, u.ImageQuality = billing.AnswerImage(size, quality)
	if asked := askedImages(t); asked > 0 && u.Images > asked {
		u.Images = asked
	}
	return u
}

// ImageTaskAsked is the Usage of the record of an image task whose create asked for at most n
// images (an edit through mediagw_image_edits, which the gateway sends itself): its end is charged
// at most n (see ImageTaskReported). An image generation passed through keeps none: its body may
// name a provider's own fields (Seedream's max_images) that the gateway does not know it followed.
func ImageTaskAsked(n int64) json.RawMessage {
	if n <= 0 {
		return nil
	}
	return madeRecord(billing.Usage{Images: n})
}

// askedImages is the images an image task's record says its create asked for at most, or 0.
func askedImages(t storage.Task) int64 {
	var u billing.Usage
	if len(t.Usage) == 0 || json.Unmarshal(t.Usage, &u) != nil {
		return 0
	}
	return u.Images
}
