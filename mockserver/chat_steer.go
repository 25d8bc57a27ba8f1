package mockserver

// The steer phase of a chat request (chat.go): one decision of what plays.

import (
	"net/http"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// Steering (docs/mock/running.md "What plays"). A chat turn is decided by
// four knobs, each taken from the most specific place that sets it:
//
//	header > rule > cassette > server
//
//   - header: the request's X-Dify-Mock-Cassette, X-Dify-Mock-Speed and
//     X-Dify-Mock-Fault;
//   - rule: the newest control-API rule (docs/mock/console.md) that matches
//     the request; it is used up only by a request that passed every check
//     Dify makes (checkChat), so a refused request never spends a times:1
//     rule;
//   - cassette: the picked cassette's dify_mock.fault (fault only);
//   - server: Config.Speed and Config.Fault.
//
// The turn itself comes from the first turn source that answers (turnSources):
// an annotation when annotation reply is enabled and one matches the query
// (Dify checks annotations before the agent runs, so a cassette named by a
// header or rule does not override it), else a recorded cassette turn
// (selectTurn). Whatever the source, the speed and fault apply the same way,
// and the turn is played by the same player (chat_stream.go).
//
// This is the only place the precedence is applied; the other routes take
// response faults the same way (header > rule > server, withFaults).

// steering is what the request's own X-Dify-Mock-* headers ask for,
// validated before anything else happens (a bad header is a 400).
type steering struct {
	cassette string  // X-Dify-Mock-Cassette, "" when absent
	speed    float64 // X-Dify-Mock-Speed, else the server's speed
	speedSet bool    // the header set speed
	fault    fault.Spec
	faultSet bool // X-Dify-Mock-Fault was sent
}

// readSteering reads and validates the steering headers. X-Dify-Mock-Fault
// was parsed, and a malformed one refused, with the request (parseChat).
func readSteering(cat *catalog, r *http.Request, req *chatRequest, serverSpeed float64) (steering, *apiError) {
	var st steering
	var e *apiError
	if st.cassette, e = cat.headerCassette(r); e != nil {
		return st, e
	}
	st.speed = serverSpeed
	if v := strings.TrimSpace(r.Header.Get(HeaderSpeed)); v != "" {
		if st.speed, e = parseSpeed(v); e != nil {
			return st, e
		}
		st.speedSet = true
	}
	st.fault, st.faultSet = req.fault, req.faultSet
	return st, nil
}

// turnPlan is steer's decision: the turn that plays and how.
type turnPlan struct {
	turn *replay.CompiledTurn
	// ref is the cassette turn (cassette source); annotation the id of the
	// annotation whose answer plays (annotation source).
	ref        turnRef
	annotation string
	// conv is the conversation a follow-up continues; followUp is false
	// for a new conversation, which admit creates.
	conv     store.Conversation
	followUp bool
	speed    float64
	spec     fault.Spec
	rule     string // the control-API rule's id, "" for none
	// match is how the cassette turn was chosen (HeaderMatch) and score
	// its similarity for matchSimilar.
	match string
	score float64
	// fallback is why the upstream did not answer (hybrid mode), "" when
	// it was not asked; answered means it did, live, and the response is
	// complete.
	fallback string
	answered bool
}

// steerInput is what a turn source decides from.
type steerInput struct {
	w   http.ResponseWriter // for the upstream source, which answers live
	r   *http.Request
	cat *catalog
	req *chatRequest
	// cassette is the cassette the request asks for (header, else rule),
	// "" for none.
	cassette string
	// faultFor is the fault for a turn of the given cassette ("" for a turn
	// that is no cassette's): header > rule > cassette > server.
	faultFor func(cassetteName string) fault.Spec
}

// A turnSource proposes the turn a request plays: ok reports that it
// decided (and filled plan's turn, ref or annotation, conv, followUp and
// spec); an error ends the request.
type turnSource func(s *appServer, in *steerInput, plan *turnPlan) (ok bool, e *apiError)

// turnSources are asked in order; the cassette source always answers.
var turnSources = []turnSource{
	(*appServer).annotationSource,
	(*appServer).upstreamSource,
	(*appServer).cassetteSource,
}

// steer makes the decision for a checked request.
func (s *appServer) steer(w http.ResponseWriter, r *http.Request, cat *catalog, req *chatRequest, hdr steering) (*turnPlan, *apiError) {
	rule, ruleFault, haveRule := s.takeRule(r, req.user, req.convID, true)
	plan := &turnPlan{speed: hdr.speed}
	in := &steerInput{w: w, r: r, cat: cat, req: req, cassette: hdr.cassette}
	if haveRule {
		plan.rule = rule.ID
		if in.cassette == "" && rule.Cassette != "" {
			if _, ok := cat.scripts[rule.Cassette]; ok {
				in.cassette = rule.Cassette
			}
		}
		if rule.Speed != nil && !hdr.speedSet {
			plan.speed = *rule.Speed
		}
	}
	in.faultFor = func(cassetteName string) fault.Spec {
		switch {
		case hdr.faultSet:
			return hdr.fault
		case haveRule && rule.Fault != "":
			return ruleFault
		}
		if spec, ok := cat.faults[cassetteName]; ok && cassetteName != "" {
			return spec
		}
		return s.fault
	}
	for _, src := range turnSources {
		ok, e := src(s, in, plan)
		if e != nil {
			return nil, e
		}
		if ok {
			break
		}
	}
	return plan, nil
}

// annotationSource answers from an annotation (docs/api §29) while
// annotation reply is enabled and one matches the query; the turn is the
// annotation's answer compiled like a recorded turn (chat_annotation.go).
func (s *appServer) annotationSource(in *steerInput, plan *turnPlan) (bool, *apiError) {
	ann, _, ok := s.store.MatchAnnotation(in.req.query)
	if !ok {
		return false, nil
	}
	if in.req.convID != "" {
		c, err := s.store.Conversation(in.req.convID, in.req.endUserID)
		if err != nil { // deleted meanwhile
			return false, errConvNotFound
		}
		plan.conv, plan.followUp = c, true
	}
	plan.turn, plan.annotation = s.annotationTurn(ann), ann.ID
	plan.spec = in.faultFor("")
	return true, nil
}

// cassetteSource picks a recorded turn (selectTurn). A follow-up claims
// its conversation's next turn under the store's lock, so concurrent
// follow-ups play distinct turns; a fault that fails the request before
// the turn plays gives the turn back.
func (s *appServer) cassetteSource(in *steerInput, plan *turnPlan) (bool, *apiError) {
	cat, req := in.cat, in.req
	choose := func(c string, next int) {
		p := cat.selectTurn(in.cassette, req.query, c, next)
		plan.ref, plan.match, plan.score = p.ref, p.how, p.score
		plan.spec = in.faultFor(plan.ref.cassette)
	}
	if req.convID == "" {
		choose("", 0)
	} else {
		conv, err := s.store.ClaimTurn(req.convID, req.endUserID, func(c string, next int) (string, int) {
			choose(c, next)
			if plan.ref.cassette == "" {
				return c, next - 1 // nothing plays (below)
			}
			if plan.spec.Before != nil && c != "" && next > 0 {
				return c, next - 1 // the conversation stays where it was
			}
			return plan.ref.cassette, plan.ref.turn
		})
		if err != nil { // deleted meanwhile
			return false, errConvNotFound
		}
		plan.conv, plan.followUp = conv, true
	}
	if plan.ref.cassette == "" {
		// Hybrid mode's folder holds no chat cassette yet and the upstream
		// did not answer.
		return false, newError(http.StatusBadGateway, "bad_gateway", "dify-mock: the upstream Dify did not answer ("+plan.fallback+") and no cassette is loaded to answer instead.")
	}
	plan.turn = cat.turn(plan.ref)
	return true, nil
}

// journalChoice records the decision in the request's journal entry.
func journalChoice(rec *journal.Record, plan *turnPlan) {
	c := journal.Choice{Annotation: plan.annotation, Rule: plan.rule, Fault: plan.spec.String(), Speed: plan.speed}
	if plan.annotation == "" {
		c.Cassette, c.Turn, c.Match = plan.ref.cassette, &plan.ref.turn, plan.matchHeader()
		if plan.match == matchSimilar {
			c.Score = &plan.score
		}
		if plan.fallback != "" {
			c.Upstream = "fallback: " + plan.fallback
		}
	}
	rec.Choice(c)
}

// matchHeader is the HeaderMatch value of a cassette turn: how it was
// chosen, or matchFallback when the upstream was asked first.
func (p *turnPlan) matchHeader() string {
	if p.fallback != "" {
		return matchFallback
	}
	return p.match
}
