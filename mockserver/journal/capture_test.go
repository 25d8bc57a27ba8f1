package journal

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestMiddlewareCutsAndRedactsEveryField: the request line and Origin are
// cut to their caps before redaction (a 700 KB query used to be kept whole
// and cost 150–225 ms of redaction), and a key-shaped value is redacted in
// every field, the user field included.
func TestMiddlewareCutsAndRedactsEveryField(t *testing.T) {
	const key = "app-JournalUserKey0123456789ab"
	j := New(10)
	h := j.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))

	long := strings.Repeat("x", 700<<10)
	req := httptest.NewRequest(http.MethodGet, "/v1/conversations?user="+key+"&pad="+long, nil)
	req.Header.Set("Origin", "http://"+key+"."+strings.Repeat("o", 2000))
	h.ServeHTTP(httptest.NewRecorder(), req)

	req = httptest.NewRequest(http.MethodPost, "/v1/"+key+"/"+strings.Repeat("p", 5000), strings.NewReader(`{"user":"`+key+`","conversation_id":"`+key+`"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)

	es := j.List(Filter{})
	if len(es) != 2 {
		t.Fatalf("%d entries", len(es))
	}
	for _, e := range es {
		for name, v := range map[string]string{"path": e.Path, "query": e.Query, "origin": e.Origin, "user": e.User, "conversation_id": e.Conversation, "body": string(e.Body)} {
			if strings.Contains(v, key) {
				t.Errorf("entry %d: the key is in %s: %.80q", e.ID, name, v)
			}
		}
		if len(e.Path) > MaxPath || len(e.Query) > MaxQuery || len(e.Origin) > MaxOrigin || len(e.User) > MaxID {
			t.Errorf("entry %d: path %d, query %d, origin %d, user %d bytes", e.ID, len(e.Path), len(e.Query), len(e.Origin), len(e.User))
		}
	}
	// The Origin is kept to MaxOrigin, as docs/security.md says (it was
	// cut to MaxID, without saying so in truncated).
	if e := es[0]; e.Truncated == nil || !strings.Contains(strings.Join(e.Truncated, ","), "query") ||
		!strings.Contains(strings.Join(e.Truncated, ","), "origin") || len(e.Origin) <= MaxID || e.User == "" {
		t.Errorf("first entry: truncated %v, user %q", e.Truncated, e.User)
	}
	if e := es[1]; !strings.Contains(strings.Join(e.Truncated, ","), "path") {
		t.Errorf("second entry: truncated %v", e.Truncated)
	}
	if h := j.Held(); h > 64<<10 {
		t.Errorf("two requests hold %d bytes", h)
	}
}

// TestInFlightRequestShowsStatusUserAndBody: once a handler has read the
// body and sent the headers, the entry (and the listing the console and
// GET /__mock/api/journal show) has the status, the user and the body,
// while the response is still streaming.
func TestInFlightRequestShowsStatusUserAndBody(t *testing.T) {
	j := New(10)
	headersOut, release := make(chan struct{}), make(chan struct{})
	h := j.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		close(headersOut)
		<-release
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(srv.URL+"/v1/chat-messages", "application/json",
			strings.NewReader(`{"query":"hi","user":"alice","conversation_id":"C0000000-0000-4000-8000-000000000001"}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-headersOut
	list := j.List(Filter{})
	if len(list) != 1 {
		t.Fatalf("%d entries", len(list))
	}
	e := list[0]
	if e.Done || e.Status != http.StatusOK || e.User != "alice" || e.Conversation != "c0000000-0000-4000-8000-000000000001" || !strings.Contains(string(e.Body), `"query":"hi"`) {
		t.Errorf("in flight: done %v status %d user %q conversation %q body %s", e.Done, e.Status, e.User, e.Conversation, e.Body)
	}
	close(release)
	<-done
	e, _ = j.Get(e.ID)
	if !e.Done || e.Status != http.StatusOK || e.User != "alice" {
		t.Errorf("finished: %+v", e)
	}
}

// wrapWriter is a handler's own wrapper, as the access log's: Of looks
// through it.
type wrapWriter struct{ http.ResponseWriter }

func (w wrapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestOfFindsTheRequestsRecordThroughWrappers: a handler reaches its
// request's live record from its writer, through wrappers that unwrap, and
// what it writes there is in the entry; a writer the journal did not wrap
// has none.
func TestOfFindsTheRequestsRecordThroughWrappers(t *testing.T) {
	j := New(10)
	var got *Record
	h := j.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got = Of(wrapWriter{w})
		got.Update(func(e *Entry) { e.Rule = "r-1" })
		w.WriteHeader(http.StatusTeapot)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/parameters?user=u", nil))
	list := j.List(Filter{})
	if got == nil || len(list) != 1 || list[0].Rule != "r-1" || list[0].Status != http.StatusTeapot || list[0].Path != "/v1/parameters" || list[0].Query != "user=u" {
		t.Fatalf("record %v, entries %+v", got, list)
	}
	if r := Of(httptest.NewRecorder()); r != nil {
		t.Errorf("Of(a writer the journal did not wrap) = %v", r)
	}
	if r := Of(wrapWriter{httptest.NewRecorder()}); r != nil {
		t.Errorf("Of(a wrapper of such a writer) = %v", r)
	}
}

// FuzzQueryValue: queryValue reads a key as url.ParseQuery(raw).Get does.
func FuzzQueryValue(f *testing.F) {
	for _, s := range []string{"user=u", "a=1&user=%zz&user=b", "us%65r=x", "user=a;b&user=c", "user", "user=a+b&conversation_id=c%20d", "+user=1&user+=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		for _, k := range []string{"user", "conversation_id"} {
			if got, want := queryValue(raw, k), q.Get(k); got != want {
				t.Fatalf("queryValue(%q, %q) = %q, url.ParseQuery gives %q", raw, k, got, want)
			}
		}
	})
}

// FuzzPathConversation: pathConversation finds the segment after
// "conversations" as splitting the path on "/" does.
func FuzzPathConversation(f *testing.F) {
	for _, s := range []string{"/v1/conversations/c1/name", "/v1/conversations//name", "/v1/conversations/", "conversations/x", "/v1/messages"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := ""
		segs := strings.Split(strings.Trim(p, "/"), "/")
		for i := 0; i+1 < len(segs); i++ {
			if segs[i] == "conversations" {
				want = segs[i+1]
				break
			}
		}
		if got := pathConversation(p); got != want {
			t.Fatalf("pathConversation(%q) = %q, want %q", p, got, want)
		}
	})
}
