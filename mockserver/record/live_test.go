package record_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// liveRecorder is a recorder for Forward (no HTTP listener of its own).
func liveRecorder(t *testing.T, up *fakeDify, dir string, edit func(*record.Config)) (*record.Recorder, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := record.Config{Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: dir, Logf: logs.Logf}
	if edit != nil {
		edit(&cfg)
	}
	rec, err := record.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("record.New: %v", err)
	}
	return rec, logs
}

type relayed struct {
	at  time.Duration
	raw string
}

func forward(t *testing.T, rec *record.Recorder, turn record.ChatTurn) (*record.Forwarded, []relayed, error) {
	t.Helper()
	start := time.Now()
	var got []relayed
	fwd, err := rec.Forward(context.Background(), turn, func(raw []byte) error {
		got = append(got, relayed{time.Since(start), string(raw)})
		return nil
	})
	if err == nil {
		kept, pending := fwd.Frames, fwd.Pending()
		rec.Save(fwd) // as the mock does once its client has the answer
		if pending && fwd.Frames != nil {
			t.Error("Save kept the frames")
		}
		fwd.Frames = kept // for the tests' assertions
	}
	return fwd, got, err
}

func TestForwardRelaysLiveAndGrowsOneCassettePerConversation(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hello ", "Seoul"), agentTurn("Day two: ", "Busan"))
	dir := t.TempDir()
	rec, logs := liveRecorder(t, up, dir, nil)

	fwd, got, err := forward(t, rec, record.ChatTurn{Query: "Plan a weekend in Seoul", User: "fe-dev"})
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	if len(got) != 5 || len(fwd.Frames) != 5 {
		t.Fatalf("relayed %d frames, kept %d; want 5 each", len(got), len(fwd.Frames))
	}
	// Live: each frame reaches relay when the upstream sends it, not at the end.
	if got[0].at > 150*time.Millisecond || got[4].at < 550*time.Millisecond {
		t.Errorf("relay times %v … %v; want the first frame near 0 and the last near 620ms", got[0].at, got[4].at)
	}
	for i, f := range fwd.Frames {
		if got[i].raw != string(f.Raw) {
			t.Errorf("frame %d relayed %q, kept %q", i, got[i].raw, f.Raw)
		}
	}
	if fwd.ConversationID != convID || !fwd.Saved || fwd.Turn != 0 || fwd.Cassette != "plan-a-weekend-in-seoul" {
		t.Fatalf("forwarded = conv %q saved %v (%s) turn %d cassette %q", fwd.ConversationID, fwd.Saved, fwd.NotSaved, fwd.Turn, fwd.Cassette)
	}
	if strings.Contains(up.chatBodies[0], "conversation_id") {
		t.Errorf("a first turn sent a conversation id upstream: %s", up.chatBodies[0])
	}

	// The follow-up continues the upstream conversation and the same cassette.
	fwd2, _, err := forward(t, rec, record.ChatTurn{Query: "And the day after?", User: "fe-dev", ConversationID: convID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(up.chatBodies[1], `"conversation_id":"`+convID+`"`) {
		t.Errorf("follow-up body %s does not continue %s", up.chatBodies[1], convID)
	}
	if fwd2.Cassette != fwd.Cassette || fwd2.Turn != 1 || !fwd2.Saved {
		t.Fatalf("follow-up went to %q turn %d saved %v (%s)", fwd2.Cassette, fwd2.Turn, fwd2.Saved, fwd2.NotSaved)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatalf("the folder does not load: %v", err)
	}
	c, ok := set.Get("plan-a-weekend-in-seoul")
	if !ok || len(c.Turns) != 2 || c.Turns[1].Request.Query != "And the day after?" {
		t.Fatalf("cassette = %+v", c)
	}
	for i, f := range c.Turns[0].Frames {
		// Offsets are stored to the microsecond.
		if d := f.Offset - fwd.Frames[i].Offset; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("frame %d saved at %v, relayed at %v", i, f.Offset, fwd.Frames[i].Offset)
		}
	}
	for name, data := range files(t, dir) {
		if strings.Contains(strings.ToLower(string(data)), strings.ToLower(upstreamKey)) {
			t.Errorf("%s contains the upstream key", name)
		}
	}
	if strings.Contains(logs.String(), upstreamKey) {
		t.Error("the log contains the upstream key")
	}
	if rec.SavedTurns() != 2 {
		t.Errorf("SavedTurns = %d, want 2", rec.SavedTurns())
	}
}

func TestForwardCapsTheTurnsARunSaves(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	dir := t.TempDir()
	rec, logs := liveRecorder(t, up, dir, func(c *record.Config) { c.MaxTurns = 1 })
	if fwd, _, err := forward(t, rec, record.ChatTurn{Query: "first question", User: "u"}); err != nil || !fwd.Saved {
		t.Fatalf("first: %v %+v", err, fwd)
	}
	fwd, got, err := forward(t, rec, record.ChatTurn{Query: "second question", User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Errorf("a turn past the cap relayed %d frames; it is still answered live", len(got))
	}
	if fwd.Saved || !strings.Contains(fwd.NotSaved, "cap") {
		t.Errorf("past the cap: saved %v, reason %q", fwd.Saved, fwd.NotSaved)
	}
	if _, err := os.Stat(filepath.Join(dir, "second-question.yaml")); err == nil {
		t.Error("second-question.yaml was written past the cap")
	}
	if !strings.Contains(logs.String(), "--max-new-turns") {
		t.Errorf("the log does not name the cap:\n%s", logs)
	}
}

func TestForwardSkipsQueriesTheFolderAlreadyAnswers(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	dir := t.TempDir()
	other, _ := liveRecorder(t, up, dir, func(c *record.Config) { c.SkipRecordedQueries = true })
	if fwd, _, err := forward(t, other, record.ChatTurn{Query: "What is the weather in Paris?", User: "u"}); err != nil || !fwd.Saved {
		t.Fatalf("first mock: %v %+v", err, fwd)
	}
	// A second mock on the same folder: same words, other case and punctuation.
	rec, _ := liveRecorder(t, up, dir, func(c *record.Config) { c.SkipRecordedQueries = true })
	fwd, _, err := forward(t, rec, record.ChatTurn{Query: "what is the WEATHER in paris", User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if fwd.Saved || !strings.Contains(fwd.NotSaved, "what-is-the-weather-in-paris.yaml") {
		t.Fatalf("duplicate query: saved %v, reason %q", fwd.Saved, fwd.NotSaved)
	}
	// Its follow-ups are not saved either: they would replay out of context.
	fwd2, _, err := forward(t, rec, record.ChatTurn{Query: "and tomorrow?", User: "u", ConversationID: convID})
	if err != nil {
		t.Fatal(err)
	}
	if fwd2.Saved || !strings.Contains(fwd2.NotSaved, "first turn") {
		t.Errorf("follow-up of an unsaved turn: saved %v, reason %q", fwd2.Saved, fwd2.NotSaved)
	}
	if rec.SavedTurns() != 0 {
		t.Errorf("SavedTurns = %d after skipped turns", rec.SavedTurns())
	}
	if n := len(files(t, dir)); n != 2 { // app.yaml and the first mock's cassette
		t.Errorf("%d files in the folder, want 2", n)
	}
}

func TestForwardFailsBeforeRelayingWhenTheUpstreamDoesNotStream(t *testing.T) {
	slow := []scheduledFrame{{500 * time.Millisecond, dataFrame(`"agent_message","id":"` + msgID + `","answer":"late"`)}}
	up := newFakeDify(t, slow)
	rec, _ := liveRecorder(t, up, t.TempDir(), nil)

	_, got, err := forward(t, rec, record.ChatTurn{Query: "please-fail", User: "u"})
	var ue *record.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != record.UpstreamStatus || ue.Status != 429 || !strings.Contains(ue.Detail, "too_many_requests") {
		t.Errorf("429: err = %v", err)
	}
	if len(got) != 0 {
		t.Errorf("a failed turn relayed %d frames", len(got))
	}

	began := time.Now()
	_, got, err = forward(t, rec, record.ChatTurn{Query: "slow", User: "u", FirstFrameTimeout: 100 * time.Millisecond})
	if !errors.As(err, &ue) || ue.Kind != record.UpstreamTimeout {
		t.Errorf("slow first frame: err = %v", err)
	}
	if d := time.Since(began); d > 450*time.Millisecond {
		t.Errorf("the timeout took %v, want about 100ms", d)
	}
	if len(got) != 0 {
		t.Errorf("a timed-out turn relayed %d frames", len(got))
	}
}

// The idle bound is the longest silence between frames, not the turn's
// length: a turn whose frames keep coming runs past it, one that goes
// quiet for longer is cut after its last whole frame.
func TestForwardIdleBoundIsBetweenFrames(t *testing.T) {
	turn := agentTurn("Hello ", "Seoul") // frames 200 ms apart at most, 620 ms in all
	stalled := []scheduledFrame{turn[0], {At: turn[1].At + 900*time.Millisecond, Raw: turn[4].Raw}}
	up := newFakeDify(t, turn, stalled)
	rec, _ := liveRecorder(t, up, t.TempDir(), func(c *record.Config) { c.MaxTurns = -1 })

	fwd, got, err := forward(t, rec, record.ChatTurn{Query: "steady", User: "u", IdleTimeout: 450 * time.Millisecond})
	if err != nil || fwd.StreamErr != nil || len(got) != 5 {
		t.Fatalf("a steady turn longer than the idle bound: err %v, stream error %v, %d frames relayed", err, fwd.StreamErr, len(got))
	}
	start := time.Now()
	fwd, got, err = forward(t, rec, record.ChatTurn{Query: "stalled", User: "u", IdleTimeout: 450 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if fwd.StreamErr == nil || !strings.Contains(fwd.StreamErr.Error(), "silent") || len(got) != 1 {
		t.Fatalf("a turn silent past the bound: stream error %v, %d frames relayed; want it cut after 1", fwd.StreamErr, len(got))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the silent turn was cut after %v", d)
	}
}
