package secrets_test

import (
	"bytes"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// A Dify app key shaped like the real ones (docs/api §1.1); not a live key.
const fakeKey = "app-Q7xk2LmN9pRt4VwY6zAb8CdE"

func TestRedactSecretsCoversEachPattern(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"dify key in prose":    {"use " + fakeKey + " here", "use [REDACTED] here"},
		"dify key glued":       {"x_" + fakeKey + "_y", "x_[REDACTED]_y"},
		"dataset key":          {"dataset-abcdefghijklmnopqrstuvwx1", "[REDACTED]"},
		"bearer":               {`"auth":"Bearer abcdefghijklmnop1234"`, `"auth":"Bearer [REDACTED]"`},
		"json field":           {`{"api_key": "s3cr3t", "total_tokens": 57}`, `{"api_key": "[REDACTED]", "total_tokens": 57}`},
		"json field camel":     {`{"accessToken":"abc","clientSecret":"d\"e"}`, `{"accessToken":"[REDACTED]","clientSecret":"[REDACTED]"}`},
		"escaped json field":   {`"tool_input":"{\"password\": \"hunter2\"}"`, `"tool_input":"{\"password\": \"[REDACTED]\"}"`},
		"query parameter":      {"http://h/v1/x?user=u&api_key=abc123&z=1", "http://h/v1/x?user=u&api_key=[REDACTED]&z=1"},
		"form body":            {"token=abc&user=u", "token=[REDACTED]&user=u"},
		"multipart text field": {"--b\r\nContent-Disposition: form-data; name=\"api_key\"\r\n\r\nabc123\r\n--b--\r\n", "--b\r\nContent-Disposition: form-data; name=\"api_key\"\r\n\r\n[REDACTED]\r\n--b--\r\n"},
		"openai key":           {"key sk-proj-abcdefghijklmnopqrstuv", "key [REDACTED]"},
		"jwt":                  {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl", "[REDACTED]"},
	}
	for name, c := range cases {
		got := string(secrets.Redact([]byte(c.in)))
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, c.want)
		}
		if f := secrets.Scan([]byte(c.in)); len(f) == 0 {
			t.Errorf("%s: scan found nothing in the unredacted input", name)
		}
		if f := secrets.Scan([]byte(got)); len(f) != 0 {
			t.Errorf("%s: scan still finds %v after redaction", name, f)
		}
	}
}

func TestRedactSecretsLeavesDifyShapesAlone(t *testing.T) {
	// Usage counters, ids and task ids look nothing like secrets (docs/api §2.5).
	in := `data: {"event":"message_end","task_id":"c3a1e5f7-2b4d-4c6e-8a9b-0d1f2e3c4b5a","metadata":{"usage":{"prompt_tokens":42,"total_tokens":57,"time_to_first_token":0.35}},"answer":"the bearer of news"}` + "\n\n"
	if got := string(secrets.Redact([]byte(in))); got != in {
		t.Errorf("changed a secret-free frame:\n got %q\nwant %q", got, in)
	}
}

func TestScanSecretsPositionsNeverQuoteTheSecret(t *testing.T) {
	data := []byte("line one\nkey: " + fakeKey + "\n")
	f := secrets.Scan(data)
	if len(f) != 1 {
		t.Fatalf("findings %v, want 1", f)
	}
	if f[0].Line != 2 || f[0].Column != 6 {
		t.Errorf("position %d:%d, want 2:6", f[0].Line, f[0].Column)
	}
	if strings.Contains(f[0].String(), fakeKey) || strings.Contains(f[0].String(), fakeKey[4:]) {
		t.Errorf("finding quotes the secret: %s", f[0])
	}
}

func TestScanSecretsExtraPatterns(t *testing.T) {
	extra := secrets.Pattern{Name: "email", Regexp: regexp.MustCompile(`[a-z]+@example\.com`)}
	f := secrets.Scan([]byte(`{"user":"alice@example.com"}`), extra)
	if len(f) != 1 || f[0].Pattern != "email" {
		t.Fatalf("findings %v", f)
	}
}

func TestBuiltinCassettesHaveNoSecrets(t *testing.T) {
	err := fs.WalkDir(cassettes.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(cassettes.FS(), path)
		if err != nil {
			return err
		}
		if f := secrets.Scan(data); len(f) != 0 {
			t.Errorf("%s: %v", path, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func FuzzRedactSecrets(f *testing.F) {
	f.Add([]byte(`{"api_key":"x","answer":"` + fakeKey + `"}`))
	f.Add([]byte("Authorization: Bearer abcdefghijklmnopqrstu\r\n"))
	f.Add([]byte(`"{\"token\": \"abc\"}"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		out := secrets.Redact(data)
		if !bytes.Equal(data, in) {
			t.Fatal("Redact modified its input")
		}
		if f := secrets.Scan(out); len(f) != 0 {
			t.Fatalf("after redaction %q still has %v", out, f)
		}
	})
}

func TestIsCredentialHeader(t *testing.T) {
	for _, h := range []string{"Authorization", "authorization", "Cookie", "Set-Cookie", "X-Api-Key", "Proxy-Authorization", "X-Auth-Token", "X-Client-Secret", "X-Session-Id"} {
		if !secrets.IsCredentialHeader(h) {
			t.Errorf("%s is not a credential header", h)
		}
	}
	for _, h := range []string{"WWW-Authenticate", "Content-Type", "X-Dify-Mock-Frames", "X-Dify-Mock-Model-Requests", "Retry-After"} {
		if secrets.IsCredentialHeader(h) {
			t.Errorf("%s is a credential header", h)
		}
	}
}

// TestShortDifyKeysAreSecrets: keys of older servers (16 characters after
// "app-") are found and redacted like current ones, so the recorder never
// saves what the linter would report.
func TestShortDifyKeysAreSecrets(t *testing.T) {
	in := "key app-Zx9Qw8Er7Ty6Ui5O done"
	if got := string(secrets.Redact([]byte(in))); got != "key [REDACTED] done" {
		t.Errorf("redacted %q", got)
	}
	if f := secrets.Scan([]byte("key app-shortkey123 done")); len(f) != 0 {
		t.Errorf("an 11-character suffix counted as a key: %v", f)
	}
}
