package mockserver_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

// TestValuesAsDifysFrameworkWritesThem: values Dify's web stack normalises
// on the way out, written as it writes them (docs/mock/api-coverage.md
// "Stored values").
func TestValuesAsDifysFrameworkWritesThem(t *testing.T) {
	// A clock with nanoseconds, in a zone other than UTC: the database
	// keeps microseconds, and the columns are naive UTC.
	now := time.Date(2026, 1, 16, 13, 0, 29, 123456789, time.FixedZone("CET", 3600))
	e := newEnv(t, mockserver.Config{Now: func() time.Time { return now }})

	// GET /end-users/{id}: end_user.py EndUserApi.get returns
	// EndUserDetail.model_validate(end_user).model_dump(mode="json"); the
	// created_at/updated_at columns are sa.DateTime (naive) filled by
	// func.current_timestamp(), so pydantic writes a naive ISO 8601 time
	// with microseconds and no zone.
	resp, body := e.multipart("/files/upload",
		part{field: "file", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("x")},
		part{field: "user", filename: "-", data: strings.NewReader("values-user")})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	up := decode[dify.FileUploadResult](t, body)
	_, body = e.do(http.MethodGet, "/end-users/"+*up.CreatedBy, nil)
	u := decode[dify.EndUser](t, body)
	if u.CreatedAt != "2026-01-16T12:00:29.123456" || u.UpdatedAt != u.CreatedAt {
		t.Errorf("end user times %q/%q, want the naive UTC 2026-01-16T12:00:29.123456", u.CreatedAt, u.UpdatedAt)
	}

	// GET /messages after an error event: handle_error leaves the row
	// _init_generate_records made, whose provider_response_latency is the
	// Float column's 0 (a Python float: 0.0 on the wire) and whose
	// total_price is the Numeric(10, 7) column's 0, read back as
	// Decimal('0E-7') and written by pydantic as str(Decimal).
	e.chat(chatBody("Count to three", "values-user"), fault.Header, "error-after:0")
	convs := decode[dify.ConversationPage](t, mustGet(t, e, "/conversations?user=values-user"))
	if len(convs.Data) != 1 {
		t.Fatalf("conversations: %+v", convs)
	}
	raw := string(mustGet(t, e, "/messages?user=values-user&conversation_id="+convs.Data[0].ID))
	for _, want := range []string{`"provider_response_latency":0.0`, `"total_price":"0E-7"`, `"status":"error"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("stored message lacks %s: %s", want, raw)
		}
	}
	if regexp.MustCompile(`"created_at":\d+\.`).MatchString(raw) {
		t.Errorf("created_at is not an integer (to_timestamp: int(datetime.timestamp())): %s", raw)
	}
}

func mustGet(t *testing.T, e *env, path string) []byte {
	t.Helper()
	resp, body := e.do(http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// TestGeneratedNameKeepsUpdatedAt: ConversationService.rename sets
// updated_at for a name given; auto_generate_name sets only the name, and
// the column has no onupdate.
func TestGeneratedNameKeepsUpdatedAt(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 1, 16, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { // a minute later at every reading
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Minute)
		return clock
	}
	e := newEnv(t, mockserver.Config{Now: now})
	e.chat(chatBody("Count to three", "namer"))
	convs := decode[dify.ConversationPage](t, mustGet(t, e, "/conversations?user=namer"))
	if len(convs.Data) != 1 {
		t.Fatalf("conversations: %+v", convs)
	}
	c := convs.Data[0]
	rename := func(body map[string]any) dify.Conversation {
		t.Helper()
		resp, got := e.do(http.MethodPost, "/conversations/"+c.ID+"/name", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("rename %v: %d %s", body, resp.StatusCode, got)
		}
		return decode[dify.Conversation](t, got)
	}
	if got := rename(map[string]any{"auto_generate": true, "user": "namer"}); got.UpdatedAt != c.UpdatedAt {
		t.Errorf("a generated name moved updated_at from %d to %d", c.UpdatedAt, got.UpdatedAt)
	}
	if got := rename(map[string]any{"name": "Mine", "user": "namer"}); got.UpdatedAt <= c.UpdatedAt {
		t.Errorf("a given name left updated_at at %d (was %d)", got.UpdatedAt, c.UpdatedAt)
	}
}
