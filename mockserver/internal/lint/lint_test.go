package lint_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
)

func problems(r *lint.Report) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestValidCassetteHasNoProblems(t *testing.T) {
	r := lint.Paths([]string{"testdata/valid.yaml"})
	if !r.OK() || r.Files != 1 || r.Chats != 1 {
		t.Fatalf("report %+v, problems:\n%s", r, strings.Join(problems(r), "\n"))
	}
}

// Each broken file yields exactly these problems, in this order.
func TestBrokenCassettesReportPreciseProblems(t *testing.T) {
	cases := map[string][]string{
		"after-error": {
			"testdata/broken/after-error.yaml:10: interaction 0: frame 2: ping after the terminal error event (frame 1); nothing follows an error",
		},
		"app-mode": {
			`testdata/broken/app-mode.yaml:24: interaction 1: GET /info mode is "chat"; dify-mock impersonates "agent" (New Agent) or "agent-chat" apps`,
		},
		"event-after-end": {
			"testdata/broken/event-after-end.yaml:10: interaction 0: frame 4: agent_message after message_end (frame 3); only tts_message, tts_message_end and ping may follow it",
		},
		"fault": {
			`testdata/broken/fault.yaml: dify_mock.fault: fault "truncate:3": truncate takes no argument (it drops message_end); to end after 3 frames use close-after:3 (the vocabulary: dify-mock faults)`,
		},
		"follow-up": {
			`testdata/broken/follow-up.yaml:26: interaction 1: request continues conversation "conv-unknown", which no earlier turn of this cassette started`,
		},
		"frame-syntax": {
			`testdata/broken/frame-syntax.yaml:10: interaction 0: frame 1: frame does not end with a blank line (SSE frames end with "\n\n", docs/api §2.4)`,
			"testdata/broken/frame-syntax.yaml:10: interaction 0: frame 2: frame holds more than one SSE frame; each recorded frame must be exactly one",
		},
		"ids": {
			`testdata/broken/ids.yaml:10: interaction 0: frame 1: message_id "msg-2" differs from "msg-1" (frame 0); one turn keeps one message_id`,
			`testdata/broken/ids.yaml:10: interaction 0: frame 2: agent_message id "other" is not its message_id "msg-1" (docs/api §2.5)`,
			`testdata/broken/ids.yaml:10: interaction 0: frame 3: agent_thought position 1 has id "th-9", but earlier frames gave it "th-1"; a row keeps its id when re-emitted`,
		},
		"missing-field": {
			`testdata/broken/missing-field.yaml:10: interaction 0: frame 0: agent_thought lacks "position" (docs/api §2.5)`,
		},
		"no-event-name": {
			`testdata/broken/no-event-name.yaml:10: interaction 0: frame 1: data has no "event" string; Dify names the event inside the JSON (docs/api §2.4)`,
		},
		"no-terminal": {
			"testdata/broken/no-terminal.yaml:10: interaction 0: stream ends without message_end or error (a stream ends with exactly one of them, docs/api §2.6)",
		},
		"not-a-cassette": {
			"testdata/broken/not-a-cassette.yaml: missing dify_mock block (format, kind, provenance)",
		},
		"offsets": {
			"testdata/broken/offsets.yaml:10: interaction 0: frame 2: offset 400ms is before the previous frame's 500ms",
		},
		"other-interaction-secret": {
			"testdata/broken/other-interaction-secret.yaml:26: interaction 1: response header Set-Cookie is stored; credentials must be dropped when recording",
		},
		"retriever-resources": {
			"testdata/broken/retriever-resources.yaml:10: interaction 0: frame 3: message_end carries retriever_resources entries, which New Agent (mode agent) never has (docs/api §2.5, §29.4)",
		},
		"secret-in-meta": {
			"testdata/broken/secret-in-meta.yaml:9: column 30: a Dify API key (app-…) is stored in the file (remove it; secrets never belong in a cassette)",
		},
		"secrets": {
			"testdata/broken/secrets.yaml:10: interaction 0: request header Authorization is stored; credentials must be dropped when recording",
			"testdata/broken/secrets.yaml:10: interaction 0: request header Authorization holds a Dify API key (app-…) (remove it; secrets never belong in a cassette)",
			"testdata/broken/secrets.yaml:10: interaction 0: frame 1: holds a Dify API key (app-…) (remove it; secrets never belong in a cassette)",
			"testdata/broken/secrets.yaml:10: interaction 0: frame 2: holds a Dify API key (app-…) (remove it; secrets never belong in a cassette)",
		},
		"two-frames-in-one": {
			"testdata/broken/two-frames-in-one.yaml:10: interaction 0: frame 0: frame holds more than one SSE frame; each recorded frame must be exactly one",
		},
		"two-messages": {
			"testdata/broken/two-messages.yaml:10: interaction 0: frame 3: second message event (frame 2 already sent the full answer; New Agent sends it once, docs/api §2.6)",
		},
		"upload-summary": {
			"testdata/broken/upload-summary.yaml:26: interaction 1: request form field note holds a Dify API key (app-…) (remove it; secrets never belong in a cassette)",
			`testdata/broken/upload-summary.yaml:26: interaction 1: upload summary file 0: sha256 must be 64 lowercase hex digits, got "not-a-hash" (see docs/mock/cassette-format.md, uploads)`,
		},
		"usage": {
			`testdata/broken/usage.yaml:10: interaction 0: frame 3: message_end metadata.usage lacks "total_price" (docs/api §2.5)`,
		},
		"wrong-type": {
			`testdata/broken/wrong-type.yaml:10: interaction 0: frame 0: agent_thought field "created_at" is a string, want an integer`,
		},
	}
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	if len(files) != len(cases) {
		t.Errorf("%d files in testdata/broken, %d cases: every broken file needs its expected problems", len(files), len(cases))
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			r := lint.Paths([]string{"testdata/broken/" + name + ".yaml"})
			got := problems(r)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestFolderChecks(t *testing.T) {
	got := problems(lint.Paths([]string{"testdata/folder"}))
	want := []string{
		"testdata/folder/Bad Name.yaml: file name: the mock loads NAME.yaml files where NAME uses lower-case letters, digits, '.', '_' and '-'",
		`testdata/folder/b.yaml: query "hello world" is also a query of a.yaml; the mock picks by query, so one of them is only reachable with X-Dify-Mock-Cassette`,
		"testdata/folder: more than one cassette is marked default: a.yaml, b.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuiltinCassettesPass(t *testing.T) {
	r := lint.Paths([]string{"../../../cassettes"})
	if !r.OK() {
		t.Fatalf("built-in cassettes:\n%s", strings.Join(problems(r), "\n"))
	}
	if r.Apps != 1 || r.Chats < 8 {
		t.Errorf("checked %d app descriptions and %d chat cassettes, want 1 and at least 8", r.Apps, r.Chats)
	}
}

// FuzzBytes: any input yields problems or none, never a panic, and a
// cassette that lints clean is one the mock's loader accepts.
func FuzzBytes(f *testing.F) {
	// Small seeds: the fuzzer minimizes every interesting input, which is
	// slow for the 10+ kB built-in cassettes.
	seeds := []string{"testdata/valid.yaml", "testdata/broken/ids.yaml", "testdata/broken/follow-up.yaml",
		"testdata/broken/after-error.yaml", "testdata/broken/secrets.yaml", "../../../cassettes/plain-answer.yaml"}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("version: 1\ndify_mock: {format: 1, kind: chat, provenance: recorded}\ninteractions: [null]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		probs := lint.Bytes("fuzz.yaml", data)
		if len(probs) > 0 {
			return
		}
		doc, err := cassette.Decode("fuzz.yaml", data)
		if err != nil {
			t.Fatalf("lint passed but Decode fails: %v", err)
		}
		if doc.Meta.Kind == cassette.KindChat {
			if _, err := cassette.ParseChat("fuzz", "fuzz.yaml", doc); err != nil {
				t.Fatalf("lint passed but ParseChat fails: %v", err)
			}
		}
	})
}

// TestCustomCredentialHeaders: lint reports every header the recorder
// drops, not only the usual five.
func TestCustomCredentialHeaders(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "Content-Type: [application/json]", "Content-Type: [application/json]\n            X-Auth-Token: [t0k3n]", 1)
	if broken == string(data) {
		t.Fatal("testdata/valid.yaml has no request Content-Type header to add to")
	}
	var found bool
	for _, p := range lint.Bytes("custom.yaml", []byte(broken)) {
		if strings.Contains(p.String(), "request header X-Auth-Token is stored") {
			found = true
		}
	}
	if !found {
		t.Errorf("X-Auth-Token not reported: %v", lint.Bytes("custom.yaml", []byte(broken)))
	}
}
