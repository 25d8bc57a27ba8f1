package verify

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// cassetteName is "verify-" and the case name in cassette-name characters.
func cassetteName(caseName string) string {
	n := "verify-" + strings.Trim(nonName.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(n) > 90 {
		n = strings.TrimRight(n[:90], "-")
	}
	return n
}

// recordDiff writes the live answer of each differing case as a chat
// cassette through the recorder's scrubbing and secret check
// (record.SaveCaptured). An answer to POST /chat-messages is a turn of its
// own; any other answer rides along a live chat turn of the run (a chat
// cassette needs one), in the order a client would meet them.
func recordDiff(rep *Report, opts Options, up *url.URL, live []*exchange, differing []pending) {
	var turn *exchange
	for _, ex := range live {
		if isLiveTurn(ex) {
			turn = ex
			break
		}
	}
	mode := ""
	if rep.UpstreamMode == dify.ModeAgent || rep.UpstreamMode == dify.ModeAgentChat {
		mode = rep.UpstreamMode
	}
	for _, p := range differing {
		if p.ex == nil {
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "no live answer"})
			continue
		}
		aspects := map[string]bool{}
		var list []string
		for _, d := range p.ds {
			if !aspects[d.Aspect] {
				aspects[d.Aspect] = true
				list = append(list, d.Aspect)
			}
		}
		meta := cassette.Meta{
			Format:     cassette.FormatVersion,
			Kind:       cassette.KindChat,
			Provenance: cassette.ProvenanceRecorded,
			Source:     "recorded by dify-mock verify from " + up.Host,
			RecordedAt: time.Now().UTC().Format(time.RFC3339),
			Mode:       mode,
		}
		var caps []record.Capture
		switch {
		case isChatRequest(p.ex):
			meta.Description = fmt.Sprintf("Live answer to conformance case %s (%s, %s), where dify-mock differed in: %s.", p.c.Name, p.c.Route, p.c.Class, strings.Join(list, ", "))
			caps = []record.Capture{p.ex.capture()}
		case turn != nil:
			meta.Description = fmt.Sprintf("Live answer to conformance case %s (%s, %s), where dify-mock differed in: %s; after a live chat turn of the same run, which a chat cassette needs.", p.c.Name, p.c.Route, p.c.Class, strings.Join(list, ", "))
			caps = []record.Capture{turn.capture(), p.ex.capture()}
		default:
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, "a cassette needs a live chat turn and the run made none (chat-turn cap?)"})
			continue
		}
		path, err := record.SaveCaptured(opts.RecordDiff, cassetteName(p.c.Name), meta, opts.UpstreamKey, opts.Rules, caps)
		if err != nil {
			rep.NotRecorded = append(rep.NotRecorded, Skip{p.c.Name, err.Error()})
			continue
		}
		rep.Recorded = append(rep.Recorded, path)
	}
}

func isChatRequest(ex *exchange) bool {
	u, err := url.Parse(ex.url)
	return err == nil && ex.method == "POST" && strings.HasSuffix(u.Path, "/chat-messages")
}
