package mockserver

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/control"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// ControlConfig configures the control API and web console under /__mock/
// (docs/mock/console.md).
type ControlConfig struct {
	// Disabled turns the control API, the console, the journal and rules off.
	Disabled bool
	// AdminToken, when set, is required by every control request.
	AdminToken string
	// AllowedHosts are Host/Origin names the control API accepts besides
	// loopback ones.
	AllowedHosts []string
	// JournalSize is how many requests the journal keeps (0 = journal.DefaultSize).
	JournalSize int
	// JournalBytes bounds the bytes the journal holds (0 = journal.DefaultBytes).
	JournalBytes int64
	// NoJournal keeps the control API, rules and console but records no
	// requests (serve --journal=false): for load tests, as WireMock's
	// --no-request-journal is (with the access line off too, the mock
	// answered 12-21 % more small requests a second in bench/results.md).
	NoJournal bool
	// CassetteDir is the folder Config.Cassettes came from: the control API
	// reloads it and saves new cassettes into it. "" = the built-in set
	// (neither is available).
	CassetteDir string
}

// setupControl builds the journal, the rules and the control handler.
func (s *Server) setupControl() {
	if s.cfg.Control.Disabled {
		return
	}
	s.journal = journal.NewBounded(s.cfg.Control.JournalSize, s.cfg.Control.JournalBytes)
	s.rules = rules.New(func() { s.journal.Publish(control.EventRules, nil) })
	s.control = s.recoverer(control.New(control.Options{
		Journal: s.journal, NoJournal: s.cfg.Control.NoJournal, Rules: s.rules, Store: s.store, Backend: controlBackend{s.appServer},
		App: s.controlApp, Apps: s.controlApps, ExportAll: s.exportState, ImportAll: s.importState,
		AdminToken: s.cfg.Control.AdminToken, AllowedHosts: s.cfg.Control.AllowedHosts, Done: s.closing,
	}))
}

// controlApp is the app a per-app control route names (?app=NAME; ""
// = the default app).
func (s *Server) controlApp(name string) (control.AppTarget, error) {
	a := s.appServer
	if name != "" {
		if a = s.byName[name]; a == nil {
			return control.AppTarget{}, fmt.Errorf("no app %q (apps: %s)", name, strings.Join(s.appNames(), ", "))
		}
	}
	return control.AppTarget{Name: a.name, Store: a.store, Backend: controlBackend{a}}, nil
}

// controlApps describes every app for GET /__mock/api.
func (s *Server) controlApps() []control.AppInfo {
	out := make([]control.AppInfo, len(s.apps))
	for i, a := range s.apps {
		out[i] = control.AppInfo{Name: a.name, Mode: a.mode, AppName: a.app.Info.Name, Default: i == 0,
			Keys: len(a.cfg.APIKeys), CassetteDir: a.cfg.Control.CassetteDir, Cassettes: len(a.cat().names)}
	}
	return out
}

// Journal is the request journal (nil when the control API is disabled;
// always empty with Control.NoJournal).
func (s *appServer) Journal() *journal.Journal { return s.journal }

// Rules are the control API's rules (nil when it is disabled).
func (s *appServer) Rules() *rules.Set { return s.rules }

// journaled journals every request that reaches api as a request to app
// ("" = none), unless the journal is off. Control requests never come
// here (Server.appFor): the console polls.
func (s *appServer) journaled(app string, api http.Handler) http.Handler {
	if s.journal == nil || s.cfg.Control.NoJournal {
		return api
	}
	return s.journal.MiddlewareFor(app, api)
}

// controlBackend gives the control API what it needs from the server.
type controlBackend struct{ s *appServer }

func (b controlBackend) Info() map[string]any {
	s := b.s
	return map[string]any{
		"app":               s.app.Info.Name,
		"mode":              s.mode,
		"speed":             s.cfg.Speed,
		"fault":             s.cfg.Fault,
		"default_cassette":  s.cat().def,
		"cassette_dir":      s.cfg.Control.CassetteDir,
		"last_reload_error": s.lastReloadErr.Load(),
		"api_base":          "/v1",
		"state_evicted":     s.evictions.evicted(),
	}
}

func (b controlBackend) CheckRule(r *rules.Rule) error {
	s := b.s
	if r.Cassette != "" {
		if err := cassette.ValidName(r.Cassette); err != nil {
			return err
		}
		if cat := s.cat(); cat.scripts[r.Cassette] == nil {
			return fmt.Errorf("cassette %q is not loaded (loaded: %s)", r.Cassette, strings.Join(cat.names, ", "))
		}
	}
	if r.Fault != "" {
		spec, err := fault.Parse(r.Fault)
		if err != nil {
			return fmt.Errorf("fault %q: %v. Known faults: %s", r.Fault, err, fault.Names())
		}
		r.Fault = spec.String()
	}
	return nil
}

func (b controlBackend) info(name string) (control.CassetteInfo, *cassette.Cassette, bool) {
	s := b.s
	cat := s.cat()
	c, ok := cat.set.Get(name)
	if !ok {
		return control.CassetteInfo{}, nil, false
	}
	ci := control.CassetteInfo{Name: name, Description: c.Meta.Description, Provenance: c.Meta.Provenance,
		Turns: len(c.Turns), Default: name == cat.def, Fault: c.Meta.Fault, Queries: make([]string, 0, len(c.Turns))}
	for _, t := range c.Turns {
		ci.Queries = append(ci.Queries, t.Request.Query)
	}
	return ci, c, true
}

func (b controlBackend) Cassettes() []control.CassetteInfo {
	names := b.s.cat().names
	out := make([]control.CassetteInfo, 0, len(names))
	for _, n := range names {
		if ci, _, ok := b.info(n); ok {
			out = append(out, ci)
		}
	}
	return out
}

func (b controlBackend) Cassette(name string) (*control.CassetteDetail, bool) {
	ci, c, ok := b.info(name)
	if !ok {
		return nil, false
	}
	d := &control.CassetteDetail{CassetteInfo: ci, TurnList: make([]control.CassetteTurn, 0, len(c.Turns))}
	for _, t := range c.Turns {
		ct := control.CassetteTurn{Query: t.Request.Query, Status: t.Status, Frames: make([]control.CassetteFrame, 0, len(t.Frames))}
		for _, f := range t.Frames {
			ct.Frames = append(ct.Frames, control.CassetteFrame{
				OffsetMS: float64(f.Offset.Microseconds()) / 1000, Event: journal.EventName(f.Raw), Data: string(f.Raw),
			})
		}
		d.TurnList = append(d.TurnList, ct)
	}
	return d, true
}

func (b controlBackend) ReloadCassettes() control.ReloadResult {
	res := control.ReloadResult{Source: b.s.cfg.Control.CassetteDir, At: time.Now().UTC()}
	if res.Source == "" {
		res.Source = "built-in cassettes"
	}
	names, err := b.s.ReloadCassettes()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK, res.Cassettes = true, names
	return res
}

// SaveCassette writes a journaled chat stream, as it was sent (faults
// included, actual timing), as a new synthesized cassette.
func (b controlBackend) SaveCassette(e journal.Entry, name, description string) (control.SavedCassette, error) {
	s := b.s
	dir := s.cfg.Control.CassetteDir
	if dir == "" {
		return control.SavedCassette{}, fmt.Errorf("%w: this dify-mock serves the built-in cassettes; start it with --cassettes DIR to save new ones", control.ErrConflict)
	}
	if err := cassette.ValidName(name); err != nil {
		return control.SavedCassette{}, fmt.Errorf("%w: %v", control.ErrInvalid, err)
	}
	if e.Method != http.MethodPost || !strings.HasSuffix(e.Path, "/chat-messages") || e.Status != http.StatusOK || len(e.Frames) == 0 {
		return control.SavedCassette{}, fmt.Errorf("%w: journal entry %d is not a streamed chat reply", control.ErrInvalid, e.ID)
	}
	if !e.Done {
		return control.SavedCassette{}, fmt.Errorf("%w: journal entry %d is still streaming", control.ErrInvalid, e.ID)
	}
	if e.StreamDataDropped || e.FramesDropped > 0 || len(e.Body) == 0 {
		return control.SavedCassette{}, fmt.Errorf("%w: journal entry %d did not keep every frame (journal stream budget); it cannot be saved", control.ErrInvalid, e.ID)
	}
	frames := make([]cassette.RecordedFrame, len(e.Frames))
	for i, f := range e.Frames {
		frames[i] = cassette.RecordedFrame{Offset: time.Duration(f.ActualMS * float64(time.Millisecond)), Raw: []byte(f.Data)}
	}
	source := fmt.Sprintf("dify-mock journal entry %d, as streamed: a replay of cassette %q", e.ID, e.Cassette)
	if e.Turn != nil {
		source += " turn " + strconv.Itoa(*e.Turn)
	}
	if e.Fault != "" && e.Fault != fault.None {
		source += " with fault " + e.Fault
	}
	meta := cassette.Meta{Kind: cassette.KindChat, Description: description, Provenance: cassette.ProvenanceSynthesized,
		Source: source, RecordedAt: e.Time.UTC().Format(time.RFC3339), Mode: s.mode}
	// The recorder's scrubbing and save-time gate, the same as a recording's
	// (the journal has redacted already; the gate also sees a secret split
	// across frames).
	data, err := record.EncodeCaptured(name, meta, "", nil, []cassette.Exchange{{
		Method: http.MethodPost, URL: "http://dify-mock/v1/chat-messages",
		RequestHeader: http.Header{"Content-Type": {"application/json"}}, RequestBody: e.Body,
		Status: http.StatusOK, ResponseHeader: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, Frames: frames,
	}})
	var refused *record.SaveRefusedError
	if errors.As(err, &refused) {
		return control.SavedCassette{}, fmt.Errorf("%w: refusing to save: %s", control.ErrInvalid, strings.Join(refused.Findings, "; "))
	}
	if err != nil {
		return control.SavedCassette{}, fmt.Errorf("%w: %v", control.ErrInvalid, err)
	}
	path, err := cassette.WriteNew(dir, name, data)
	if err != nil {
		if errors.Is(err, cassette.ErrExists) {
			return control.SavedCassette{}, fmt.Errorf("%w: %v", control.ErrConflict, err)
		}
		return control.SavedCassette{}, err
	}
	return control.SavedCassette{Name: name, Path: path}, nil
}
