package simulator

import (
	"net/http"
)

// openAIRoutes maps path suffixes to the OpenAI-style endpoints the simulator answers.
func (s *Simulator) openAIRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{}
}

// generateContent answers a Gemini-style models/{model}:generateContent call.
func (s *Simulator) generateContent(w http.ResponseWriter, r *http.Request) {
	upstreamError(w, http.StatusNotFound, "NotFound", "not simulated yet")
}
