package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
)

// taskPath is the gateway's video task endpoint, which the playground calls as any client does.
const taskPath = "/api/v3/contents/generations/tasks"

// playgroundClient sends the playground's creates to the gateway. It follows no redirects: the
// gateway answers a create itself.
var playgroundClient = &http.Client{
	Timeout:       60 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

type playgroundData struct {
	Models      []string
	Resolutions []string
	Model       string
	Prompt      string
	Duration    int
	Resolution  string
}

func (h *Handler) playground(w http.ResponseWriter, r *http.Request, s *session) {
	if h.Gateway == "" {
		h.fail(w, r, s, http.StatusNotFound, "The playground is off: the console's configuration names no gateway (playground <url>).")
		return
	}
	d, err := h.playgroundForm(r, s, playgroundData{Duration: 5, Resolution: "720p"})
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.show(w, s, "playground", "Playground", d)
}

// playgroundForm fills the form's choices: the models the user is shown (modelsShown, as on the
// prices page: a member is offered, and so told of, only the models they may use).
func (h *Handler) playgroundForm(r *http.Request, s *session, d playgroundData) (playgroundData, error) {
	if h.Models != nil {
		shown, err := h.modelsShown(r, s)
		if err != nil {
			return d, err
		}
		for _, m := range h.Models() {
			if shown(m) {
				d.Models = append(d.Models, m)
			}
		}
	}
	d.Resolutions = []string{"480p", "720p", "1080p", "4k"}
	return d, nil
}

// createPlaygroundTask creates a video task through the gateway with the API key the user typed
// (it is sent once, to the gateway, and neither kept nor logged), then opens the task's page,
// which follows it to the end.
func (h *Handler) createPlaygroundTask(w http.ResponseWriter, r *http.Request, s *session) {
	if h.Gateway == "" {
		h.notFound(w, r, s)
		return
	}
	d, err := h.playgroundForm(r, s, playgroundData{Model: r.PostFormValue("model"), Prompt: strings.TrimSpace(r.PostFormValue("prompt")),
		Resolution: r.PostFormValue("resolution")})
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	duration, durationErr := strconv.Atoi(r.PostFormValue("duration"))
	d.Duration = duration
	key := strings.TrimSpace(r.PostFormValue("key"))
	again := func(status int, msg string) {
		h.render(w, status, "playground", page{Title: "Playground", User: s.user, CSRF: s.csrf(), Error: msg, Data: d})
	}
	if durationErr != nil {
		again(http.StatusBadRequest, "The duration must be a whole number of seconds.")
		return
	}
	if key == "" || d.Prompt == "" || d.Model == "" {
		again(http.StatusBadRequest, "An API key, a model and a prompt are needed.")
		return
	}
	if h.keyRefusedHere(r, key) {
		h.Logger.Info("playground create refused: the key's allow_ips exclude the user's address", zap.String("user", s.user.Name),
			zap.String("remote_ip", h.clientIP(r)))
		again(http.StatusForbidden, "This API key may not be used from your address (its allowed addresses exclude it).")
		return
	}
	body, err := json.Marshal(map[string]any{
		"model":      d.Model,
		"content":    []map[string]string{{"type": "text", "text": d.Prompt}},
		"duration":   d.Duration,
		"resolution": d.Resolution,
	})
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, h.Gateway+taskPath, bytes.NewReader(body))
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := playgroundClient.Do(req)
	if err != nil {
		h.Logger.Error("playground create", zap.String("gateway", h.Gateway), zap.Error(err))
		again(http.StatusBadGateway, "The gateway did not answer.")
		return
	}
	defer resp.Body.Close()
	var answer struct {
		ID      string `json:"id"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK || answer.ID == "" {
		msg := answer.Message
		if msg == "" {
			msg = answer.Error.Message
		}
		status := resp.StatusCode
		if status < 400 {
			status = http.StatusBadGateway // an answer without a task id
		}
		again(status, "The gateway answered "+strconv.Itoa(resp.StatusCode)+": "+msg)
		return
	}
	h.audit(s, "playground task", answer.ID)
	http.Redirect(w, r, "/tasks/"+url.PathEscape(answer.ID), http.StatusSeeOther)
}

// keyRefusedHere reports whether the key's allow_ips refuse the console user's address (every
// forwarded address too, behind a lenient trusted proxy), as mediagw_auth would refuse the user
// calling the gateway. The playground's create reaches the gateway from the console's own
// address, which the key may allow: a key allowed only from inside, pasted from outside, must
// not create through it. Anything else about the key (unknown, disabled, expired) is the
// gateway's to answer, as for any client.
func (h *Handler) keyRefusedHere(r *http.Request, key string) bool {
	if h.KeyAuth == nil {
		return false
	}
	ip, err := netip.ParseAddr(h.clientIP(r))
	if err != nil {
		ip = netip.Addr{} // a key with allowed addresses then refuses it
	}
	id, err := h.KeyAuth.AuthenticateKey(r.Context(), key, ip)
	if errors.Is(err, auth.ErrIPNotAllowed) {
		return true
	}
	return err == nil && len(id.AllowIPs) > 0 && h.ForwardedAllowed != nil && !h.ForwardedAllowed(r, id)
}
