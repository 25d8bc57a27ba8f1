package verify_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/verify"
)

// userRoute is a Service API route whose validate_app_token resolves an
// end user from the request (api/controllers/service_api/wraps.py
// FetchUserArg): where it reads `user` and whether a missing one is refused
// (required) or becomes the app's default end user.
type userRoute struct {
	method   string
	path     *regexp.Regexp // after /v1; ids as the <uuid:…> converter accepts them
	from     string         // "json", "query", "form"
	required bool
}

const uuidRE = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

var userRoutes = []userRoute{
	{"POST", regexp.MustCompile(`^/chat-messages$`), "json", true},
	{"POST", regexp.MustCompile(`^/chat-messages/[^/]+/stop$`), "json", true},
	{"GET", regexp.MustCompile(`^/conversations$`), "query", false},
	{"DELETE", regexp.MustCompile(`^/conversations/` + uuidRE + `$`), "json", false},
	{"POST", regexp.MustCompile(`^/conversations/` + uuidRE + `/name$`), "json", false},
	{"GET", regexp.MustCompile(`^/conversations/` + uuidRE + `/variables$`), "query", false},
	{"PUT", regexp.MustCompile(`^/conversations/` + uuidRE + `/variables/` + uuidRE + `$`), "json", false},
	{"GET", regexp.MustCompile(`^/messages$`), "query", false},
	{"POST", regexp.MustCompile(`^/messages/` + uuidRE + `/feedbacks$`), "json", true},
	{"GET", regexp.MustCompile(`^/messages/` + uuidRE + `/suggested$`), "query", true},
	{"POST", regexp.MustCompile(`^/files/upload$`), "form", false},
	{"GET", regexp.MustCompile(`^/files/` + uuidRE + `/preview$`), "query", false},
	{"POST", regexp.MustCompile(`^/audio-to-text$`), "form", false},
	{"POST", regexp.MustCompile(`^/text-to-audio$`), "json", false},
}

// requestUser is what Dify's validate_app_token reads as `user` from req:
// ok is false when the request never gets that far (a body that is not
// JSON, a JSON value that is not an object).
func requestUser(r userRoute, req seenRequest) (user any, ok bool) {
	switch r.from {
	case "query":
		if v, found := req.Query["user"]; found {
			return v[0], true
		}
		return nil, true
	case "form":
		mt, params, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		switch mt {
		case "multipart/form-data":
			form, err := multipart.NewReader(strings.NewReader(req.Body), params["boundary"]).ReadForm(64 << 20)
			if err != nil {
				return nil, true // Werkzeug reads a broken form as empty
			}
			defer func() { _ = form.RemoveAll() }()
			if v := form.Value["user"]; len(v) > 0 {
				return v[0], true
			}
		case "application/x-www-form-urlencoded":
			if v, err := url.ParseQuery(req.Body); err == nil && v.Has("user") {
				return v.Get("user"), true
			}
		}
		return nil, true
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil, false // request.get_json() refuses it first (415)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(req.Body)))
	dec.UseNumber()
	var body any
	if dec.Decode(&body) != nil {
		return nil, false // 400 before the user is read
	}
	obj, isObj := body.(map[string]any)
	if !isObj {
		return nil, false // .get("user") of a non-object: 500 first
	}
	return obj["user"], true
}

// TestEveryRequestActsAsTheRunsEndUser: every request verify sends that
// makes Dify resolve an end user names the run's own user. One without a
// user would act as the app's default end user (DEFAULT-USER), shared with
// every other client that sends none; one with another value (a number,
// another string) would create a second end user in the app. The only
// requests without the run's user are those Dify refuses before any end
// user exists: a required user left out, or a body that is not a JSON
// object.
func TestEveryRequestActsAsTheRunsEndUser(t *testing.T) {
	up := newFakeUpstream(t)
	const user = verify.UserPrefix + "enduser0test"
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, User: user, MaxChatTurns: -1})
	if rep.User != user {
		t.Fatalf("report user %q, want %q", rep.User, user)
	}
	checked := 0
	for _, req := range up.requests() {
		path := strings.TrimPrefix(req.Path, "/v1")
		for _, r := range userRoutes {
			if r.method != req.Method || !r.path.MatchString(path) {
				continue
			}
			got, reached := requestUser(r, req)
			if !reached {
				continue
			}
			checked++
			s, isStr := got.(string)
			switch {
			case got == nil || s == "" && isStr:
				if !r.required {
					t.Errorf("%s %s?%s acts as the default end user: no `user` in its %s (body %.120q)", req.Method, req.Path, req.Query.Encode(), r.from, req.Body)
				}
			case !isStr || s != user:
				t.Errorf("%s %s acts as end user %v, not the run's %q", req.Method, req.Path, got, user)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d requests reached an end-user lookup; the route table above no longer matches what verify sends", checked)
	}
	skipped := false
	for _, s := range rep.Skipped {
		skipped = skipped || s.Case == "wrong-type/stop-user-number-is-str"
	}
	if !skipped {
		t.Errorf("the number-user case was not listed as skipped: %+v", rep.Skipped)
	}
}

// TestEveryCaseActsAsTheRunsEndUser is the same rule over the case table
// itself, so the cases a run skips (another app mode, a feature switched
// off) are held to it too: `user` is the run's placeholder wherever a
// route resolves an end user, unless Dify refuses the request first or
// the case is one verify never sends (OtherUser).
func TestEveryCaseActsAsTheRunsEndUser(t *testing.T) {
	checked := 0
	for _, c := range verify.Cases(nil) {
		if c.OtherUser != "" {
			continue
		}
		cr := c.Request
		path, rawQuery, _ := strings.Cut(cr.Path, "?")
		q, _ := url.ParseQuery(rawQuery)
		h := http.Header{}
		for k, v := range cr.Header {
			h.Set(k, v)
		}
		req := seenRequest{Method: cr.Method, Path: path, Body: cr.Body, Query: q, Header: h}
		for _, r := range userRoutes {
			if r.method != cr.Method || !r.path.MatchString(strings.NewReplacer("{unknown_uuid}", uuidZero, "{conversation_id}", uuidZero, "{message_id}", uuidZero, "{upload_file_id}", uuidZero).Replace(path)) {
				continue
			}
			var got any
			reached := true
			if r.from == "form" && cr.Multipart != nil {
				for _, p := range cr.Multipart {
					if p.Field == "user" && p.Filename == "" && !p.NoFilename {
						got = p.Data
						break
					}
				}
			} else {
				got, reached = requestUser(r, req)
			}
			if !reached {
				continue
			}
			checked++
			s, isStr := got.(string)
			switch {
			case got == nil || isStr && s == "":
				if !r.required {
					t.Errorf("%s (%s %s) acts as the default end user", c.Name, cr.Method, cr.Path)
				}
			case s != "{user}":
				t.Errorf("%s (%s %s) acts as end user %v, not the run's", c.Name, cr.Method, cr.Path, got)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d cases reach an end-user lookup", checked)
	}
}

const uuidZero = "00000000-0000-4000-8000-000000000000"
