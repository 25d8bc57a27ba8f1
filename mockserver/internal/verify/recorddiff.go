package verify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// appWide are routes whose answers list the whole app's data, other end
// users' included: --record-diff never writes them.
var appWide = map[string]bool{
	"GET /app/feedbacks":    true,
	"GET /apps/annotations": true,
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// cassetteName is "verify-" and the case name in cassette-name characters.
func cassetteName(caseName string) string {
	n := "verify-" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(n) > 90 {
		n = strings.TrimRight(n[:90], "-")
	}
	return n
}

// recordDiff writes the live answers of the differing cases as chat
// cassettes through the recorder's scrubbing and secret check
// (record.SaveCaptured):
//
//   - the streamed turn of a chat-turn case whose stream differs, as
//     verify-<case>.yaml: the mock replays your server's stream from it;
//   - every other differing answer in one verify-differences.yaml, in case
//     order, after a live chat turn of the run (a chat cassette needs one;
//     one file keeps its query unique in the folder). Answers to
//     POST /chat-messages are turns of their own there.
//
// Should the combined file be refused, each case is tried on its own, so
// one answer that keeps a secret does not cost the others.
func recordDiff(rep *Report, opts Options, up *url.URL, live []*exchange, differing []pending) {
	mode := ""
	if rep.UpstreamMode == dify.ModeAgent || rep.UpstreamMode == dify.ModeAgentChat {
		mode = rep.UpstreamMode
	}
	meta := func(desc string) cassette.Meta {
		return cassette.Meta{
			Format:      cassette.FormatVersion,
			Kind:        cassette.KindChat,
			Description: desc,
			Provenance:  cassette.ProvenanceRecorded,
			Source:      "recorded by dify-mock verify from " + up.Host,
			RecordedAt:  time.Now().UTC().Format(time.RFC3339),
			Mode:        mode,
		}
	}
	save := func(name, desc string, caps []cassette.Exchange) error {
		path, err := record.SaveCaptured(opts.RecordDiff, name, meta(desc), opts.UpstreamKey, opts.Rules, caps)
		if err == nil {
			rep.Recorded = append(rep.Recorded, path)
		}
		return err
	}

	var streamEx *exchange // a live turn written on its own
	var rest []pending
	for _, p := range differing {
		switch {
		case p.ex == nil:
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "no live answer"})
		case appWide[p.c.Route]:
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "its answer lists the whole app's data (other users' too), which is compared by shape only and never written"})
		case p.c.ChatTurn && isLiveTurn(p.ex) && streamEx == nil:
			// The stream layout differs: write your server's stream. A
			// request a cassette turn cannot hold (a lax boolean written
			// as a string) is replaced by another live turn of the run,
			// the same app's layout, and the description says so.
			ex, desc := p.ex, fmt.Sprintf("Live streamed turn of conformance case %s, where dify-mock differed in: %s.", p.c.Name, aspectList(p.ds))
			if !isChatBody(ex.reqBody) {
				ex = nil
				for _, other := range live {
					if isLiveTurn(other) && isChatBody(other.reqBody) {
						ex = other
						break
					}
				}
				desc = fmt.Sprintf("A live streamed turn of the run that verified conformance case %s, where dify-mock's stream differed in: %s (the case's own request does not load as a cassette turn; this turn's stream has the same app and layout).", p.c.Name, aspectList(p.ds))
			}
			if ex == nil {
				rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "its request does not load as a cassette turn, and the run has no other live turn"})
				continue
			}
			streamEx = ex
			if err := save(cassetteName(p.c.Name), desc, []cassette.Exchange{ex.capture()}); err != nil {
				rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, err.Error()})
			}
		case isChatRequest(p.ex) && !isChatBody(p.ex.reqBody):
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "its request body does not load as a cassette turn (not a chat request as the mock reads one)"})
		default:
			rest = append(rest, p)
		}
	}
	if len(rest) == 0 {
		return
	}
	// The turn the other answers ride along: preferably not the one
	// written on its own above (its query would be in two files).
	var turn *exchange
	for _, ex := range live {
		if isLiveTurn(ex) && isChatBody(ex.reqBody) && (turn == nil || turn == streamEx) {
			turn = ex
		}
	}
	if turn == nil {
		for _, p := range rest {
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "a cassette needs a live chat turn and the run made none (chat-turn cap 0?)"})
		}
		return
	}
	caps := []cassette.Exchange{turn.capture()}
	var items []string
	for _, p := range rest {
		caps = append(caps, p.ex.capture())
		items = append(items, fmt.Sprintf("%s (%s)", p.c.Name, aspectList(p.ds)))
	}
	const note = " The first turn is a live chat turn of the same run, which a chat cassette needs."
	desc := fmt.Sprintf("Live answers of %d conformance case(s) where dify-mock differed, in this order: %s.", len(rest), strings.Join(items, "; ")) + note
	err := save("verify-differences", desc, caps)
	if err == nil {
		return
	}
	for _, p := range rest {
		desc := fmt.Sprintf("Live answer of conformance case %s, where dify-mock differed in: %s.", p.c.Name, aspectList(p.ds)) + note
		if err := save(cassetteName(p.c.Name), desc, []cassette.Exchange{turn.capture(), p.ex.capture()}); err != nil {
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, err.Error()})
		}
	}
}

func aspectList(ds []Difference) string {
	seen := map[string]bool{}
	var list []string
	for _, d := range ds {
		if !seen[d.Aspect] {
			seen[d.Aspect] = true
			list = append(list, d.Aspect)
		}
	}
	return strings.Join(list, ", ")
}

func isChatRequest(ex *exchange) bool {
	u, err := url.Parse(ex.url)
	return err == nil && ex.method == "POST" && strings.HasSuffix(u.Path, "/chat-messages")
}

// isChatBody reports whether body reads as a chat request (the check a
// cassette's turns must pass to load).
func isChatBody(body []byte) bool {
	var req dify.ChatRequest
	return json.Unmarshal(body, &req) == nil
}
