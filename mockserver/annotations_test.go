package mockserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

func (e *env) createAnnotation(question, answer string) dify.Annotation {
	e.t.Helper()
	resp, body := e.do("POST", "/apps/annotations", map[string]any{"question": question, "answer": answer})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create annotation: %d %s", resp.StatusCode, body)
	}
	return decode[dify.Annotation](e.t, body)
}

// replyJob starts an annotation-reply job and polls it to its end.
func (e *env) replyJob(action string, threshold float64, provider, model string) dify.AnnotationReplyJob {
	e.t.Helper()
	resp, body := e.do("POST", "/apps/annotation-reply/"+action, map[string]any{
		"score_threshold": threshold, "embedding_provider_name": provider, "embedding_model_name": model})
	if resp.StatusCode != 200 || strings.Contains(string(body), "error_msg") {
		e.t.Fatalf("start %s: %d %s", action, resp.StatusCode, body)
	}
	job := decode[dify.AnnotationReplyJob](e.t, body)
	if job.JobStatus != "waiting" {
		e.t.Fatalf("new job = %+v, want waiting", job)
	}
	resp, body = e.do("GET", "/apps/annotation-reply/"+action+"/status/"+job.JobID, nil)
	if resp.StatusCode != 200 {
		e.t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	return decode[dify.AnnotationReplyJob](e.t, body)
}

// Encodes annotation.py AnnotationListApi.get/post and
// AnnotationUpdateDeleteApi.put/delete with AppAnnotationService
// (get_annotation_list_by_app_id, insert_app_annotation_directly,
// update_app_annotation_directly, delete_app_annotation), docs/api §27.
func TestAnnotationCRUD(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} { // no mode gate
		t.Run(mode, func(t *testing.T) {
			tick := time.Unix(1760000000, 0)
			var mu sync.Mutex
			e := newEnv(t, mockserver.Config{Mode: mode, Now: func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				tick = tick.Add(time.Second)
				return tick
			}})
			a1 := e.createAnnotation("What are your opening hours?", "9 to 5.")
			a2 := e.createAnnotation("Where is the office?", "Berlin.")
			a3 := e.createAnnotation("", "") // the service only rejects None
			if a1.HitCount != 0 || a1.CreatedAt == 0 || a1.Question != "What are your opening hours?" || a1.Answer != "9 to 5." {
				t.Errorf("created = %+v", a1)
			}
			list := func(q string) dify.AnnotationPage {
				resp, body := e.do("GET", "/apps/annotations"+q, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("list %s: %d %s", q, resp.StatusCode, body)
				}
				return decode[dify.AnnotationPage](t, body)
			}
			p := list("")
			if p.Total != 3 || p.Page != 1 || p.Limit != 20 || p.HasMore || len(p.Data) != 3 || p.Data[0].ID != a3.ID || p.Data[2].ID != a1.ID {
				t.Errorf("list = %+v (want newest first)", p)
			}
			// keyword: case-insensitive substring of question or answer.
			if p := list("?keyword=BERLIN"); p.Total != 1 || p.Data[0].ID != a2.ID {
				t.Errorf("keyword = %+v", p)
			}
			// has_more = (len(data) == limit): true on an exactly full last page.
			if p := list("?limit=1&page=3"); !p.HasMore || len(p.Data) != 1 || p.Data[0].ID != a1.ID || p.Page != 3 || p.Total != 3 {
				t.Errorf("page 3 of 1 = %+v", p)
			}
			if p := list("?limit=2&page=2"); p.HasMore || len(p.Data) != 1 {
				t.Errorf("page 2 of 2 = %+v", p)
			}
			// request.args.get(type=int): bad integers fall back to the defaults;
			// paginate(error_out=False) reads page 1 for page < 1 and 20 rows for limit < 1.
			if p := list("?page=x&limit=y"); p.Page != 1 || p.Limit != 20 || len(p.Data) != 3 {
				t.Errorf("bad ints = %+v", p)
			}
			if p := list("?page=0&limit=0"); p.Page != 0 || p.Limit != 0 || len(p.Data) != 3 || p.HasMore {
				t.Errorf("zero page/limit = %+v", p)
			}
			if p := list("?page=99999999999"); len(p.Data) != 0 || p.Total != 3 {
				t.Errorf("far page = %+v", p)
			}

			resp, body := e.do("PUT", "/apps/annotations/"+a1.ID, map[string]any{"question": "Opening hours?", "answer": "9 to 6."})
			up := decode[dify.Annotation](t, body)
			if resp.StatusCode != 200 || up.ID != a1.ID || up.Answer != "9 to 6." || up.CreatedAt != a1.CreatedAt {
				t.Errorf("update: %d %s", resp.StatusCode, body)
			}

			resp, body = e.do("DELETE", "/apps/annotations/"+a2.ID, nil)
			if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
				t.Errorf("delete: %d %q", resp.StatusCode, body)
			}
			resp, body = e.do("DELETE", "/apps/annotations/"+a2.ID, nil)
			e.wantError(resp, body, 404, "not_found", "Annotation not found")
			resp, body = e.do("PUT", "/apps/annotations/"+a2.ID, map[string]any{"question": "q", "answer": "a"})
			e.wantError(resp, body, 404, "not_found", "Annotation not found")
			if p := list(""); p.Total != 2 {
				t.Errorf("after delete: %+v", p)
			}
		})
	}
}

func TestAnnotationValidation(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	a := e.createAnnotation("q", "a")
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, message      string
	}{
		{"create without answer", "POST", "/apps/annotations", map[string]any{"question": "q"}, 400, "invalid_param", pyMsg("AnnotationCreatePayload", "answer", "Field required", "missing", "{'question': 'q'}", "dict")},
		{"create without question", "POST", "/apps/annotations", map[string]any{"answer": "a"}, 400, "invalid_param", pyMsg("AnnotationCreatePayload", "question", "Field required", "missing", "{'answer': 'a'}", "dict")},
		{"create null question", "POST", "/apps/annotations", `{"question":null,"answer":"a"}`, 400, "invalid_param", pyMsg("AnnotationCreatePayload", "question", "Input should be a valid string", "string_type", "None", "NoneType")},
		{"create number", "POST", "/apps/annotations", map[string]any{"question": 1, "answer": "a"}, 400, "invalid_param", pyMsg("AnnotationCreatePayload", "question", "Input should be a valid string", "string_type", "1", "int")},
		{"create no body", "POST", "/apps/annotations", "", 400, "bad_request", "*"},
		// The body is validated before the annotation is looked up.
		{"update unknown, bad body", "PUT", "/apps/annotations/00000000-0000-4000-8000-000000000000", "{}", 400, "invalid_param", "2 validation errors for AnnotationCreatePayload\nquestion\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.12/v/missing\nanswer\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.12/v/missing"},
		{"update partial", "PUT", "/apps/annotations/" + a.ID, map[string]any{"answer": "x"}, 400, "invalid_param", pyMsg("AnnotationCreatePayload", "question", "Field required", "missing", "{'answer': 'x'}", "dict")},
		{"update non-uuid", "PUT", "/apps/annotations/abc", map[string]any{"question": "q", "answer": "a"}, 404, "html", ""},
		{"delete non-uuid", "DELETE", "/apps/annotations/abc", nil, 404, "html", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(tc.method, tc.path, tc.body)
			if tc.code == "html" { // <uuid:…> rejects it while routing
				wantHTML404(t, resp, body)
				return
			}
			e.wantError(resp, body, tc.status, tc.code, tc.message)
		})
	}
}

// Encodes annotation.py AnnotationReplyActionApi.post /
// AnnotationReplyActionStatusApi.get and the enable/disable
// annotation_reply tasks (docs/api §28): waiting → completed or error;
// finished jobs expire after 10 minutes; a job is read under its own action.
func TestAnnotationReplyJobs(t *testing.T) {
	now := time.Unix(1760000000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newEnv(t, mockserver.Config{Now: clock, AnnotationJobDelay: 2 * time.Second})

	start := func(action string, body any) dify.AnnotationReplyJob {
		resp, b := e.do("POST", "/apps/annotation-reply/"+action, body)
		if resp.StatusCode != 200 {
			t.Fatalf("start: %d %s", resp.StatusCode, b)
		}
		return decode[dify.AnnotationReplyJob](t, b)
	}
	status := func(action, id string) (int, dify.AnnotationReplyJob, []byte) {
		resp, b := e.do("GET", "/apps/annotation-reply/"+action+"/status/"+id, nil)
		var j dify.AnnotationReplyJob
		if resp.StatusCode == 200 {
			j = decode[dify.AnnotationReplyJob](t, b)
		}
		return resp.StatusCode, j, b
	}
	settings := map[string]any{"score_threshold": 0.9, "embedding_provider_name": "openai", "embedding_model_name": "text-embedding-3-small"}
	job := start("enable", settings)
	if job.JobStatus != "waiting" {
		t.Fatalf("job = %+v", job)
	}
	if code, j, _ := status("enable", job.JobID); code != 200 || j.JobStatus != "waiting" || j.ErrorMsg != "" || j.JobID != job.JobID {
		t.Errorf("before the worker: %d %+v", code, j)
	}
	// The Redis key embeds the action: the same id under disable is unknown.
	code, _, body := status("disable", job.JobID)
	if code != 400 || !strings.Contains(string(body), `"The job does not exist."`) {
		t.Errorf("other action: %d %s", code, body)
	}
	advance(2 * time.Second)
	if _, j, _ := status("enable", job.JobID); j.JobStatus != "completed" {
		t.Errorf("after the worker: %+v", j)
	}
	advance(10*time.Minute + time.Second) // SETEX 600
	resp, b := e.do("GET", "/apps/annotation-reply/enable/status/"+job.JobID, nil)
	e.wantError(resp, b, 400, "invalid_param", "The job does not exist.")

	// With annotations to index, an enable job without model names fails.
	e.createAnnotation("q", "a")
	bad := start("enable", map[string]any{"score_threshold": 1, "embedding_provider_name": "", "embedding_model_name": ""})
	advance(2 * time.Second)
	if _, j, _ := status("enable", bad.JobID); j.JobStatus != "error" || j.ErrorMsg == "" {
		t.Errorf("failing job: %+v", j)
	}
	// Disable: values are required but ignored.
	off := start("disable", map[string]any{"score_threshold": "0.5", "embedding_provider_name": "x", "embedding_model_name": "y"})
	advance(2 * time.Second)
	if _, j, _ := status("disable", off.JobID); j.JobStatus != "completed" {
		t.Errorf("disable: %+v", j)
	}

	for _, tc := range []struct {
		name, path    string
		body          any
		status        int
		code, message string
	}{
		{"no body", "/apps/annotation-reply/enable", "", 400, "bad_request", "*"},
		{"missing threshold", "/apps/annotation-reply/disable", `{"embedding_provider_name":"x","embedding_model_name":"y"}`, 400, "invalid_param", pyMsg("AnnotationReplyActionPayload", "score_threshold", "Field required", "missing", "{'embedding_provider_name...edding_model_name': 'y'}", "dict")},
		{"bad threshold", "/apps/annotation-reply/enable", map[string]any{"score_threshold": "high", "embedding_provider_name": "x", "embedding_model_name": "y"}, 400, "invalid_param", pyMsg("AnnotationReplyActionPayload", "score_threshold", "Input should be a valid number, unable to parse string as a number", "float_parsing", "'high'", "str")},
		{"list threshold", "/apps/annotation-reply/enable", map[string]any{"score_threshold": []int{1}, "embedding_provider_name": "x", "embedding_model_name": "y"}, 400, "invalid_param", pyMsg("AnnotationReplyActionPayload", "score_threshold", "Input should be a valid number", "float_type", "[1]", "list")},
		{"missing model", "/apps/annotation-reply/enable", `{"score_threshold":1,"embedding_provider_name":"x"}`, 400, "invalid_param", pyMsg("AnnotationReplyActionPayload", "embedding_model_name", "Field required", "missing", "{'score_threshold': 1, 'e...ing_provider_name': 'x'}", "dict")},
		// The released controller has no else branch: result is unbound.
		{"unknown action", "/apps/annotation-reply/toggle", settings, 500, "internal_server_error", "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("POST", tc.path, tc.body)
			e.wantError(resp, body, tc.status, tc.code, tc.message)
		})
	}
	resp, b = e.do("GET", "/apps/annotation-reply/enable/status/not-a-uuid", nil)
	wantHTML404(t, resp, b)
}

// Encodes AnnotationReplyFeature.query (docs/api §29.1) and the two stream
// shapes: New Agent's publish_text_answer (one `message`, then message_end)
// and legacy AgentChatAppRunner.run → direct_output (one `message` per
// character), each with metadata.annotation_reply (docs/api §29.2–§29.5).
func TestAnnotationAnswersChat(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mockserver.Config{Mode: mode})
			a := e.createAnnotation("What are your opening hours?", "9–5, Mon–Fri.")

			// Reply disabled: the cassette answers.
			if _, frames := e.chat(chatBody("What are your opening hours?", "u1")); hasAnnotation(frames) {
				t.Fatal("an annotation answered while reply was disabled")
			}
			if j := e.replyJob("enable", 0.8, "openai", "text-embedding-3-small"); j.JobStatus != "completed" {
				t.Fatalf("enable = %+v", j)
			}

			resp, frames := e.chat(chatBody("what are your OPENING hours", "u1"))
			if resp.Header.Get(mockserver.HeaderAnnotation) != a.ID || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Errorf("headers = %v", resp.Header)
			}
			var answer strings.Builder
			var messages int
			for _, f := range frames[:len(frames)-1] {
				if f.event() != "message" {
					t.Fatalf("event %q before message_end (only `message` allowed): %s", f.event(), f.raw)
				}
				if _, ok := f.data["from_variable_selector"]; !ok || f.str("id") != f.str("message_id") || f.str("task_id") == "" {
					t.Errorf("message frame %s", f.raw)
				}
				answer.WriteString(f.str("answer"))
				messages++
			}
			want := 1
			if mode == dify.ModeAgentChat {
				want = len([]rune("9–5, Mon–Fri.")) // direct_output: one event per character
			}
			if messages != want || answer.String() != "9–5, Mon–Fri." {
				t.Errorf("%d message events %q, want %d with the annotation's answer", messages, answer.String(), want)
			}
			end := frames[len(frames)-1]
			if end.event() != "message_end" {
				t.Fatalf("last frame %s", end.raw)
			}
			if !strings.Contains(end.raw, `"metadata":{"annotation_reply":{"id":"`+a.ID+`","account":{"id":"`) ||
				!strings.Contains(end.raw, `"retriever_resources":[],"usage":{`) || !strings.Contains(end.raw, `"files":null`) {
				t.Errorf("message_end = %s", end.raw)
			}
			var ev dify.MessageEndEvent
			decodeInto(t, end.raw, &ev)
			if ar, err := ev.Metadata.Annotation(); err != nil || ar == nil || ar.ID != a.ID || ar.Account.Name == "" || ar.Account.ID == "" {
				t.Errorf("annotation_reply = %+v, %v", ar, err)
			}
			if ev.Metadata.Usage == nil || ev.Metadata.Usage.TotalTokens != 0 || ev.Metadata.Usage.Currency != "USD" {
				t.Errorf("usage = %+v", ev.Metadata.Usage)
			}

			// The turn is stored; hit_count grew.
			conv, msgID := end.str("conversation_id"), end.str("message_id")
			_, body := e.do("GET", "/messages?conversation_id="+conv+"&user=u1", nil)
			page := decode[dify.MessagePage](t, body)
			if len(page.Data) != 1 || page.Data[0].ID != msgID || page.Data[0].Answer != "9–5, Mon–Fri." ||
				page.Data[0].AgentThoughts == nil || len(page.Data[0].AgentThoughts) != 0 || page.Data[0].Query != "what are your OPENING hours" {
				t.Errorf("history = %s", body)
			}
			_, body = e.do("GET", "/apps/annotations", nil)
			if got := decode[dify.AnnotationPage](t, body).Data[0].HitCount; got != 1 {
				t.Errorf("hit_count = %d, want 1", got)
			}
			// A follow-up in the same conversation is answered too, and feedback works on it.
			if _, frames := e.chat(chatBody("What are your opening hours?", "u1", "conversation_id", conv)); !hasAnnotation(frames) {
				t.Error("follow-up not answered by the annotation")
			}
			if resp, body := e.do("POST", "/messages/"+msgID+"/feedbacks", map[string]any{"rating": "like", "user": "u1"}); resp.StatusCode != 200 {
				t.Errorf("feedback on an annotation turn: %d %s", resp.StatusCode, body)
			}

			// Below the threshold: the cassette answers.
			if _, frames := e.chat(chatBody("What are the opening hours of the museum?", "u1")); hasAnnotation(frames) {
				t.Error("a dissimilar query was answered by the annotation")
			}
			// Deleting the annotation stops it.
			e.do("DELETE", "/apps/annotations/"+a.ID, nil)
			if _, frames := e.chat(chatBody("What are your opening hours?", "u1")); hasAnnotation(frames) {
				t.Error("a deleted annotation answered")
			}
			// So does disabling reply.
			b := e.createAnnotation("Where is the office?", "Berlin.")
			if _, frames := e.chat(chatBody("Where is the office?", "u2")); !hasAnnotation(frames) {
				t.Error("new annotation not answering while enabled")
			}
			e.replyJob("disable", 1, "x", "y")
			if _, frames := e.chat(chatBody("Where is the office?", "u2")); hasAnnotation(frames) {
				t.Errorf("annotation %s answered after disable", b.ID)
			}
		})
	}
}

// A stored threshold of 0 means 1 (score_threshold or 1): only the same
// words match.
func TestAnnotationThresholdZeroMeansExact(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	e.createAnnotation("What are your opening hours?", "9 to 5.")
	e.replyJob("enable", 0, "openai", "m")
	if _, frames := e.chat(chatBody("What's your opening hours?", "u1")); hasAnnotation(frames) {
		t.Error("a near match answered with threshold 0 (= 1)")
	}
	if _, frames := e.chat(chatBody("what are your opening hours", "u1")); !hasAnnotation(frames) {
		t.Error("an exact match did not answer with threshold 0 (= 1)")
	}
}

func hasAnnotation(frames []sseFrame) bool {
	for _, f := range frames {
		if f.event() == "message_end" && strings.Contains(f.raw, `"annotation_reply":{"id"`) {
			return true
		}
	}
	return false
}

func decodeInto(t *testing.T, raw string, v any) {
	t.Helper()
	payload := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(raw), "data:"))
	if err := json.Unmarshal([]byte(payload), v); err != nil {
		t.Fatal(err)
	}
}

// direct_output sleeps 10 ms after each character (base_app_runner.py); at
// speed 1 the legacy stream cannot be faster than that.
func TestAnnotationAgentChatPacing(t *testing.T) {
	e := newEnv(t, mockserver.Config{Mode: dify.ModeAgentChat})
	e.createAnnotation("Hours?", "0123456789")
	e.replyJob("enable", 0.9, "openai", "m")
	start := time.Now()
	_, frames := e.chat(chatBody("hours", "u1"), mockserver.HeaderSpeed, "1")
	if !hasAnnotation(frames) || len(frames) != 11 {
		t.Fatalf("%d frames", len(frames))
	}
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Errorf("10 characters streamed in %v, want at least 9 × 10 ms", took)
	}
	// The one player schedules each character at start + i × 10 ms
	// (absolute deadlines, as every turn): none arrives before its time. A
	// first-to-last gap is no measure: a first frame that arrives late (seen:
	// 78 ms under the race detector) shortens it without anything early.
	for i, f := range frames[:10] {
		if due := time.Duration(i) * 10 * time.Millisecond; f.at < due {
			t.Errorf("character %d arrived after %v, before its %v", i, f.at, due)
		}
	}
}
