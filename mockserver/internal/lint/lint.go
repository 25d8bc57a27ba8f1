// Package lint checks dify-mock cassettes before the mock (or a reviewer)
// relies on them: the cassette format (go-vcr v2 + dify_mock block, frame
// table), SSE frame syntax, the event order of a chat stream, the fields
// every event needs (docs/api §2.5), ids that stay consistent within a turn, and
// secrets that must never be stored. Every problem names its file, YAML
// line, interaction and frame; all problems are reported, not just the
// first. Paths checks files and folders, Bytes one file's contents;
// `dify-mock lint` (mockserver/cmd/dify-mock/lint.go) is the command-line
// front end. Dify app DSL files (mockserver/internal/appdsl) are checked as the mock
// reads them.
package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"gopkg.in/yaml.v3"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// Problem is one finding. Interaction and Frame are 0-based indexes in file
// order (as in the loader's errors), -1 when the problem is not about one.
type Problem struct {
	File        string
	Line        int // 1-based line in the file, 0 when unknown
	Interaction int
	Frame       int
	Message     string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Interaction >= 0 {
		fmt.Fprintf(&b, ": interaction %d", p.Interaction)
	}
	if p.Frame >= 0 {
		fmt.Fprintf(&b, ": frame %d", p.Frame)
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Report is the result of linting some paths.
type Report struct {
	Problems []Problem
	// Warnings are what a Dify app DSL file says that the mock ignores or
	// reads in its own way (appdsl.Warning): worth a look, not a failure.
	Warnings []Problem
	// Files counts the files checked; Chats and Apps count those that are
	// chat cassettes and app descriptions (app.yaml or a Dify app DSL).
	Files, Chats, Apps int
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// scanSecrets is secrets.Scan (the recorder's own check), one
// finding per position.
func scanSecrets(data []byte) []secrets.Finding {
	var out []secrets.Finding
	seen := map[int]bool{}
	for _, f := range secrets.Scan(data) {
		if !seen[f.Offset] {
			seen[f.Offset] = true
			out = append(out, f)
		}
	}
	return out
}

// Paths lints files and folders. A folder contributes the *.yaml files
// directly inside it (as the mock loads it; subfolders such as scenarios/
// are skipped) and any Dify app DSL file (*.yml or *.yaml, appdsl), and
// gets the folder-wide checks: one default cassette, one app description,
// distinct queries. A DSL file is checked as `dify-mock serve` reads it
// (appdsl.Parse): what would stop serve is a problem with the same text,
// the rest are warnings.
func Paths(paths []string) *Report {
	r := &Report{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			r.Problems = append(r.Problems, fileProblem(p, 0, "%v", unwrapPathErr(err)))
			continue
		}
		if !st.IsDir() {
			if data, ok, err := dslFile(p); err != nil {
				r.Files++
				r.Problems = append(r.Problems, fileProblem(p, 0, "%v", unwrapPathErr(err)))
			} else if ok {
				lintDSL(r, p, data)
			} else {
				lintOne(r, p, filepath.Base(p))
			}
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			r.Problems = append(r.Problems, fileProblem(p, 0, "%v", unwrapPathErr(err)))
			continue
		}
		var results []*fileResult
		for _, e := range entries {
			if e.IsDir() || !appdsl.IsDSLName(e.Name()) {
				continue
			}
			path := filepath.Join(p, e.Name())
			if data, err := appdsl.ReadFile(path); err == nil && cassette.IsAppDSL(data) {
				results = append(results, lintDSL(r, path, data))
				continue
			}
			if !strings.HasSuffix(e.Name(), ".yaml") {
				continue // a *.yml file that is not a DSL: the mock ignores it
			}
			results = append(results, lintOne(r, path, e.Name()))
		}
		if len(results) == 0 {
			r.Problems = append(r.Problems, fileProblem(p, 0, "no *.yaml cassettes or Dify app DSL file in this folder"))
			continue
		}
		folderChecks(r, p, results)
	}
	return r
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func lintOne(r *Report, path, base string) *fileResult {
	r.Files++
	data, err := readLimited(path)
	if err != nil {
		r.Problems = append(r.Problems, fileProblem(path, 0, "%v", err))
		return &fileResult{file: path}
	}
	res := lintBytes(path, data)
	if err := cassette.ValidName(strings.TrimSuffix(base, ".yaml")); err != nil || !strings.HasSuffix(base, ".yaml") {
		res.Problems = append([]Problem{fileProblem(path, 0, "file name: the mock loads NAME.yaml files where NAME uses lower-case letters, digits, '.', '_' and '-'")}, res.Problems...)
	}
	r.Problems = append(r.Problems, res.Problems...)
	switch res.kind {
	case cassette.KindChat:
		r.Chats++
	case cassette.KindApp:
		r.Apps++
	}
	return res
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathErr(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > cassette.MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte limit", st.Size(), cassette.MaxFileSize)
	}
	data := make([]byte, 0, st.Size())
	buf := bytes.NewBuffer(data)
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// dslFile reads path when it is a Dify app DSL file: a *.yml file (the
// mock reads no cassette from one, so it can only be a DSL) or a *.yaml
// file with top-level kind: app and an app block.
func dslFile(path string) ([]byte, bool, error) {
	yml := strings.HasSuffix(strings.ToLower(path), ".yml")
	if !yml && !strings.HasSuffix(path, ".yaml") {
		return nil, false, nil
	}
	data, err := appdsl.ReadFile(path)
	if err != nil {
		if yml {
			return nil, false, err
		}
		return nil, false, nil // a large *.yaml is the cassette checks' to report
	}
	return data, yml || cassette.IsAppDSL(data), nil
}

// lintDSL checks a Dify app DSL file as serve reads it, plus the secret
// scan every cassette gets.
func lintDSL(r *Report, path string, data []byte) *fileResult {
	r.Files++
	r.Apps++
	res := &fileResult{file: path, kind: cassette.KindApp}
	_, warns, err := appdsl.Parse(data, path)
	for _, w := range warns {
		r.Warnings = append(r.Warnings, Problem{File: w.File, Line: w.Line, Interaction: -1, Frame: -1, Message: w.Message})
	}
	if err != nil {
		var de *appdsl.Error
		if errors.As(err, &de) {
			res.Problems = append(res.Problems, fileProblem(de.File, de.Line, "%s", de.Reason))
		} else {
			res.Problems = append(res.Problems, fileProblem(path, 0, "%v", err))
		}
	}
	for _, f := range scanSecrets(data) {
		res.Problems = append(res.Problems, Problem{File: path, Line: f.Line, Interaction: -1, Frame: -1,
			Message: fmt.Sprintf("column %d: a %s is stored in the file (remove it; secrets never belong in a DSL kept in git)", f.Column, f.Pattern)})
	}
	r.Problems = append(r.Problems, res.Problems...)
	return res
}

// fileResult is what one file contributes to folder-wide checks.
type fileResult struct {
	file     string
	Problems []Problem
	kind     string
	isDef    bool
	queries  []string
}

func fileProblem(file string, line int, format string, args ...any) Problem {
	return Problem{File: file, Line: line, Interaction: -1, Frame: -1, Message: fmt.Sprintf(format, args...)}
}

// linter collects the problems of one file.
type linter struct {
	file  string
	data  []byte // the document, for lines
	lines []int  // YAML line of each interaction, once a problem needs them
	probs []Problem
}

// interactionLines is the YAML line of each interaction. The document is
// parsed for them only when a problem is reported: a clean file (each
// turn hybrid mode saves) is not parsed a second time.
func (l *linter) interactionLines() []int {
	if l.lines == nil && l.data != nil {
		l.lines = interactionLines(l.data)
		if l.lines == nil {
			l.lines = []int{}
		}
	}
	return l.lines
}

func (l *linter) add(interaction, frame int, format string, args ...any) {
	line := 0
	if lines := l.interactionLines(); interaction >= 0 && interaction < len(lines) {
		line = lines[interaction]
	}
	l.probs = append(l.probs, Problem{File: l.file, Line: line, Interaction: interaction, Frame: frame, Message: fmt.Sprintf(format, args...)})
}

// Bytes lints one cassette document; file names it in problems. Folder-wide
// checks (default, app description, distinct queries) need Paths.
func Bytes(file string, data []byte) []Problem {
	return lintBytes(file, data).Problems
}

func lintBytes(file string, data []byte) *fileResult {
	l := &linter{file: file}
	res := &fileResult{file: file}
	defer func() { res.Problems = l.probs }()
	if len(data) > cassette.MaxFileSize {
		l.add(-1, -1, "file is %d bytes, over the %d-byte limit", len(data), cassette.MaxFileSize)
		return res
	}
	f, err := cassette.Decode(file, data)
	if err != nil {
		l.addCassetteErr(err)
		l.secretSweep(data, nil)
		return res
	}
	l.data = data
	res.kind = f.Meta.Kind
	located := make([]int, len(f.Interactions))
	switch f.Meta.Kind {
	case cassette.KindChat:
		res.isDef = f.Meta.Default
		res.queries = l.chat(f, located)
		if len(l.probs) == 0 {
			if _, err := cassette.ParseChat("lint", file, f); err != nil {
				l.addCassetteErr(err)
			}
		}
	case cassette.KindApp:
		l.app(f, located)
		if len(l.probs) == 0 {
			if _, err := cassette.ParseApp("lint", file, f); err != nil {
				l.addCassetteErr(err)
			}
		}
	default:
		l.add(-1, -1, "dify_mock.kind must be %q or %q, got %q", cassette.KindChat, cassette.KindApp, f.Meta.Kind)
	}
	l.meta(f.Meta)
	l.secretSweep(data, located)
	return res
}

func (l *linter) addCassetteErr(err error) {
	var ce *cassette.Error
	if errors.As(err, &ce) {
		l.add(ce.Interaction, ce.Frame, "%s", ce.Reason)
		return
	}
	l.add(-1, -1, "%v", err)
}

// interactionLines finds the YAML line where each interaction starts.
func interactionLines(data []byte) []int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "interactions" && root.Content[i+1].Kind == yaml.SequenceNode {
			var lines []int
			for _, item := range root.Content[i+1].Content {
				lines = append(lines, item.Line)
			}
			return lines
		}
	}
	return nil
}

func (l *linter) meta(m cassette.Meta) {
	if m.Provenance == cassette.ProvenanceSynthesized && strings.TrimSpace(m.Source) == "" {
		l.add(-1, -1, "dify_mock.source is empty: a synthesized cassette must say how it was made")
	}
	if m.Fault != "" {
		if _, err := fault.Parse(m.Fault); err != nil {
			l.add(-1, -1, "dify_mock.fault: %v (the vocabulary: dify-mock faults)", err)
		}
	}
	if m.Kind == cassette.KindChat {
		switch m.Mode {
		case "", dify.ModeAgent, dify.ModeAgentChat:
		default:
			l.add(-1, -1, "dify_mock.mode must be %q or %q, got %q", dify.ModeAgent, dify.ModeAgentChat, m.Mode)
		}
	}
}

// headerValues looks a header up case-insensitively (YAML keeps the case
// it was written in).
func headerValues(h http.Header, name string) []string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// secretsIn checks one interaction's headers, URL and bodies. Stream bodies
// are checked frame by frame (by the stream checks), so only the request
// side and non-stream responses are scanned here.
func (l *linter) secretsIn(i int, in *vcr.Interaction, scanResponseBody bool) int {
	n := 0
	for _, side := range []struct {
		name string
		h    http.Header
	}{{"request", in.Request.Headers}, {"response", in.Response.Headers}} {
		for _, k := range slices.Sorted(maps.Keys(side.h)) {
			if secrets.IsCredentialHeader(k) {
				l.add(i, -1, "%s header %s is stored; credentials must be dropped when recording", side.name, http.CanonicalHeaderKey(k))
				n++
			}
		}
	}
	report := func(where string, data string) {
		for _, f := range scanSecrets([]byte(data)) {
			l.add(i, -1, "%s holds a %s (remove it; secrets never belong in a cassette)", where, f.Pattern)
			n++
		}
	}
	report("request URL", in.Request.URL)
	report("request body", in.Request.Body)
	for _, k := range slices.Sorted(maps.Keys(in.Request.Form)) {
		report("request form field name", k)
		for _, v := range in.Request.Form[k] {
			report("request form field "+k, v)
		}
	}
	for k, vs := range in.Request.Headers {
		for _, v := range vs {
			report("request header "+k, v)
		}
	}
	for k, vs := range in.Response.Headers {
		for _, v := range vs {
			report("response header "+k, v)
		}
	}
	if scanResponseBody {
		report("response body", in.Response.Body)
	}
	return n
}

// secretSweep scans the raw file for secrets the located checks cannot
// see (YAML comments, the dify_mock block, odd keys). located[i] is how many
// secrets were already reported for interaction i.
func (l *linter) secretSweep(data []byte, located []int) {
	for _, f := range scanSecrets(data) {
		i := -1
		lines := l.interactionLines()
		for k := len(lines) - 1; k >= 0; k-- {
			if f.Line >= lines[k] {
				i = k
				break
			}
		}
		if i >= 0 && i < len(located) && located[i] > 0 {
			continue
		}
		l.probs = append(l.probs, Problem{File: l.file, Line: f.Line, Interaction: -1, Frame: -1,
			Message: fmt.Sprintf("column %d: a %s is stored in the file (remove it; secrets never belong in a cassette)", f.Column, f.Pattern)})
	}
}

func (l *linter) app(f *cassette.File, located []int) {
	for i, in := range f.Interactions {
		located[i] += l.secretsIn(i, in, true)
		p, err := cassette.APIPath(in.Request.URL)
		if err != nil || !strings.EqualFold(in.Request.Method, http.MethodGet) {
			l.add(i, -1, "app descriptions hold GETs only, got %s %s", in.Request.Method, in.Request.URL)
			continue
		}
		code := in.Response.Code
		if code == 0 {
			code = http.StatusOK
		}
		if code == http.StatusOK && !json.Valid([]byte(in.Response.Body)) {
			l.add(i, -1, "GET %s body is not valid JSON", p)
			continue
		}
		if p == "/info" {
			var info dify.AppInfo
			if err := json.Unmarshal([]byte(in.Response.Body), &info); err != nil {
				l.add(i, -1, "GET /info body: %v", err)
			} else if info.Mode != dify.ModeAgent && info.Mode != dify.ModeAgentChat {
				l.add(i, -1, "GET /info mode is %q; dify-mock impersonates %q (New Agent) or %q apps", info.Mode, dify.ModeAgent, dify.ModeAgentChat)
			}
		}
	}
}

// chat checks a chat cassette and returns its turns' queries.
func (l *linter) chat(f *cassette.File, located []int) []string {
	var queries []string
	conversations := map[string]bool{}
	turns := 0
	for i, in := range f.Interactions {
		if !cassette.IsChat(in) {
			located[i] += l.secretsIn(i, in, true)
			if cassette.IsUploadSummary(in) {
				if _, err := cassette.ParseUploadSummary(in); err != nil {
					l.add(i, -1, "%v (see docs/mock/cassette-format.md, uploads)", err)
				}
			}
			continue
		}
		turns++
		located[i] += l.secretsIn(i, in, false)
		var req dify.ChatRequest
		if err := json.Unmarshal([]byte(in.Request.Body), &req); err != nil {
			l.add(i, -1, "request body is not a chat request: %v", err)
		} else {
			if strings.TrimSpace(req.Query) == "" {
				l.add(i, -1, "request has no query (the mock matches cassettes by query)")
			} else {
				queries = append(queries, req.Query)
			}
			if strings.TrimSpace(req.User) == "" {
				l.add(i, -1, "request has no user (Dify requires it, docs/api §2.1)")
			}
			if req.ResponseMode == dify.ResponseModeBlocking {
				l.add(i, -1, "request asks for blocking mode; agent apps only stream (docs/api §2.2)")
			}
			// A cassette's first turn may continue a conversation recorded
			// elsewhere; a later turn must continue this cassette's own.
			if req.ConversationID != "" && turns > 1 && !conversations[req.ConversationID] {
				l.add(i, -1, "request continues conversation %q, which no earlier turn of this cassette started", req.ConversationID)
			}
		}
		code := in.Response.Code
		if code == 0 {
			code = http.StatusOK
		}
		if code != http.StatusOK {
			var e struct {
				Code    *string `json:"code"`
				Message *string `json:"message"`
				Status  *int    `json:"status"`
			}
			if json.Unmarshal([]byte(in.Response.Body), &e) != nil || e.Code == nil || e.Message == nil || e.Status == nil {
				l.add(i, -1, "HTTP %d response body is not a Dify error {code, message, status} (docs/api §1.4)", code)
			}
			located[i] += l.secretsIn(i, &vcr.Interaction{Response: vcr.Response{Body: in.Response.Body}}, true)
			continue
		}
		if ct := headerValues(in.Response.Headers, "Content-Type"); len(ct) > 0 && !strings.HasPrefix(strings.ToLower(ct[0]), "text/event-stream") {
			l.add(i, -1, "response Content-Type is %q, want text/event-stream (docs/api §2.4)", ct[0])
		}
		if v := headerValues(in.Response.Headers, cassette.ModelRequestsHeader); len(v) > 0 {
			var n int
			if _, err := fmt.Sscanf(strings.TrimSpace(v[0]), "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != strings.TrimSpace(v[0]) {
				l.add(i, -1, "%s %q is not a non-negative integer", cassette.ModelRequestsHeader, v[0])
			}
		}
		values := headerValues(in.Response.Headers, cassette.FramesHeader)
		if len(values) == 0 {
			l.add(i, -1, "200 chat response without %s header (per-frame offsets and lengths)", cassette.FramesHeader)
			located[i] += l.secretsIn(i, &vcr.Interaction{Response: vcr.Response{Body: in.Response.Body}}, true)
			continue
		}
		frames, err := cassette.DecodeFrames(values, in.Response.Body)
		if err != nil {
			var ce *cassette.Error
			if errors.As(err, &ce) {
				l.add(i, ce.Frame, "%s", ce.Reason)
			} else {
				l.add(i, -1, "%v", err)
			}
			located[i] += l.secretsIn(i, &vcr.Interaction{Response: vcr.Response{Body: in.Response.Body}}, true)
			continue
		}
		s := &streamCheck{l: l, interaction: i, mode: f.Meta.Mode}
		located[i] += s.run(frames)
		if s.conversationID != "" {
			conversations[s.conversationID] = true
		}
	}
	if turns == 0 {
		l.add(-1, -1, "no POST /chat-messages interaction")
	}
	return queries
}

// normalizeQuery is how the mock compares queries after an exact match
// fails: whitespace collapsed, case folded.
func normalizeQuery(q string) string {
	return strings.ToLower(strings.Join(strings.Fields(q), " "))
}

func folderChecks(r *Report, dir string, results []*fileResult) {
	var defaults, apps []string
	owner := map[string]string{}
	for _, res := range results {
		switch res.kind {
		case cassette.KindApp:
			apps = append(apps, filepath.Base(res.file))
		case cassette.KindChat:
			if res.isDef {
				defaults = append(defaults, filepath.Base(res.file))
			}
			seen := map[string]bool{}
			for _, q := range res.queries {
				n := normalizeQuery(q)
				if seen[n] {
					continue
				}
				seen[n] = true
				if other, ok := owner[n]; ok {
					r.Problems = append(r.Problems, fileProblem(res.file, 0, "query %q is also a query of %s; the mock picks by query, so one of them is only reachable with X-Dify-Mock-Cassette", q, other))
					continue
				}
				owner[n] = filepath.Base(res.file)
			}
		}
	}
	sort.Strings(defaults)
	if len(defaults) > 1 {
		r.Problems = append(r.Problems, fileProblem(dir, 0, "more than one cassette is marked default: %s", strings.Join(defaults, ", ")))
	}
	if len(apps) > 1 {
		r.Problems = append(r.Problems, fileProblem(dir, 0, "more than one app description: %s", strings.Join(apps, ", ")))
	}
}
