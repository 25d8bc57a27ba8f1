package record

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/upstream"
)

// recordApp fetches the app description (GET /, /info, /parameters, /meta,
// /site; docs/api §1.1, §13–§16) with the upstream key and writes it as app.yaml,
// so the recorded app replays as itself. A folder that already holds an
// app description keeps it if it describes the same app (name and mode) and
// is refused otherwise: one folder is one app.
func (r *Recorder) recordApp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var ins []*vcr.Interaction
	var info dify.AppInfo
	for _, p := range cassette.AppPaths {
		req, err := r.up.NewRequest(ctx, http.MethodGet, p, "", nil)
		if err != nil {
			return err
		}
		resp, in, err := r.roundTripVCR(req)
		if err != nil {
			return fmt.Errorf("fetching the app description from %s: GET %s: %v", r.host, p, err)
		}
		resp.Body.Close()
		if err := upstream.CheckAnswer(resp); err != nil {
			return fmt.Errorf("fetching the app description from %s: GET %s: %v", r.host, p, err)
		}
		if (p == "/info" || p == "/parameters") && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("fetching the app description from %s: GET %s answered HTTP %d: %s (check --upstream and the upstream key)",
				r.host, p, resp.StatusCode, difyMessage([]byte(in.Response.Body)))
		}
		if p == "/info" {
			if err := json.Unmarshal([]byte(in.Response.Body), &info); err != nil {
				return fmt.Errorf("fetching the app description from %s: GET /info is not JSON: %v", r.host, err)
			}
		}
		ins = append(ins, in)
	}
	r.mode = info.Mode
	if info.Mode != dify.ModeAgent && info.Mode != dify.ModeAgentChat {
		r.logf("warning: the upstream app's mode is %q, not an agent app (agent or agent-chat); recording anyway", info.Mode)
	}

	existing, path, err := r.existingApp()
	if err != nil {
		return err
	}
	if existing != nil {
		if existing.Info.Name != info.Name || existing.Info.Mode != info.Mode {
			return fmt.Errorf("%s describes app %q (mode %s) but the upstream key belongs to %q (mode %s): record into another folder, or delete that file to replace it",
				path, existing.Info.Name, existing.Info.Mode, info.Name, info.Mode)
		}
		r.logf("%s already describes this app (%q, mode %s); kept as is", path, info.Name, info.Mode)
		return nil
	}

	f := &cassette.File{
		Meta: cassette.Meta{
			Format:      cassette.FormatVersion,
			Kind:        cassette.KindApp,
			Description: fmt.Sprintf("App description of %q (mode %s).", info.Name, info.Mode),
			Provenance:  cassette.ProvenanceRecorded,
			Source:      "recorded by dify-mock record from " + r.host,
			RecordedAt:  time.Now().UTC().Format(time.RFC3339),
			Mode:        info.Mode,
		},
		Interactions: ins,
	}
	data, err := cassette.Encode(f)
	if err != nil {
		return err
	}
	if err := r.check(cassette.AppName, data, cassette.KindApp); err != nil {
		return err
	}
	written, err := cassette.WriteNew(r.dir, cassette.AppName, data)
	if err != nil {
		return err
	}
	r.written[written] = true
	r.logf("saved %s (%q, mode %s)", written, info.Name, info.Mode)
	return nil
}

// existingApp finds an app description already in the folder.
func (r *Recorder) existingApp() (*cassette.App, string, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, "", err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		path := filepath.Join(r.dir, e.Name())
		st, err := e.Info()
		if err != nil || st.Size() > cassette.MaxFileSize {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		f, err := cassette.Decode(path, data)
		if err != nil || f.Meta.Kind != cassette.KindApp {
			continue
		}
		app, err := cassette.ParseApp(strings.TrimSuffix(e.Name(), ".yaml"), path, f)
		if err != nil {
			return nil, "", fmt.Errorf("the folder already holds an app description that does not load: %w", err)
		}
		return app, path, nil
	}
	return nil, "", nil
}

// difyMessage summarises a (scrubbed) Dify error body for a message.
func difyMessage(body []byte) string {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Code != "" || e.Message != "") {
		return strings.TrimSpace(e.Code + " " + e.Message)
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "empty body"
	}
	return s
}
