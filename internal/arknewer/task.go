// Package arknewer declares, for tests, the members of a content generation task answer that
// newer releases of the Ark Go SDK (volcengine-go-sdk's main branch: GetContentGenerationTaskResponse
// and ListContentGenerationTaskItem) type beyond the release go.mod builds with, each with the Go
// type those releases give it. A client on such a release fails the whole answer when one of them
// has another JSON type, so the gateway's answers must decode into Task as well as into the SDK's
// own types.
package arknewer

// Task is what a newer SDK release reads from a task answer beyond go.mod's release.
type Task struct {
	SafetyIdentifier      *string `json:"safety_identifier"`
	SubdivisionLevel      *string `json:"subdivisionlevel"`
	FileFormat            *string `json:"fileformat"`
	Frames                *int64  `json:"frames"`
	FramesPerSecond       *int64  `json:"framespersecond"`
	Resolution            *string `json:"resolution"`
	Ratio                 *string `json:"ratio"`
	OutputFormat          *string `json:"output_format"`
	Duration              *int64  `json:"duration"`
	ServiceTier           *string `json:"service_tier"`
	ExecutionExpiresAfter *int64  `json:"execution_expires_after"`
	Priority              *int32  `json:"priority"`
	GenerateAudio         *bool   `json:"generate_audio"`
	Draft                 *bool   `json:"draft"`
	DraftTaskID           *string `json:"draft_task_id"`
	Tools                 []*struct {
		Type string `json:"type"`
	} `json:"tools"`
	Content struct {
		FileURL string `json:"file_url"`
	} `json:"content"`
	Usage struct {
		PromptTokensDetails struct {
			AudioTokens       *int `json:"audio_tokens"`
			AudioCachedTokens *int `json:"audio_cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			AudioTokens *int `json:"audio_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}
