package mockserver

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/similar"
)

// How a turn was chosen (HeaderMatch, the journal's match).
const (
	matchHeader       = "header"
	matchConversation = "conversation"
	matchExact        = "exact"
	matchSimilar      = "similar"
	matchDefault      = "default"
	matchUpstream     = "upstream"
	matchFallback     = "fallback"
)

// turnRef names one recorded turn.
type turnRef struct {
	cassette string
	turn     int
}

// indexQueries maps every recorded query to its turn, exactly and
// normalised, and indexes them for the nearest-turn match. Ties go to the
// earliest turn index, then the cassette name in sort order, so a query
// that opens a conversation beats the same words as a follow-up.
func (c *catalog) indexQueries() {
	c.exact, c.loose = map[string]turnRef{}, map[string]turnRef{}
	var refs []turnRef
	for _, name := range c.names {
		for i := range c.scripts[name].Turns {
			refs = append(refs, turnRef{name, i})
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].turn < refs[j].turn })
	for _, ref := range refs {
		q := c.scripts[ref.cassette].Turns[ref.turn].Query
		if _, ok := c.exact[q]; !ok {
			c.exact[q] = ref
		}
		if n := normalizeQuery(q); n != "" {
			if _, ok := c.loose[n]; !ok {
				c.loose[n] = ref
			}
		}
	}
	// similar.Index gives a tie to the later document: the refs go in
	// reverse order of preference.
	c.nearRefs = make([]turnRef, len(refs))
	vecs := make([]similar.Vector, len(refs))
	for i, ref := range refs {
		k := len(refs) - 1 - i
		c.nearRefs[k] = ref
		vecs[k] = similar.Parse(c.scripts[ref.cassette].Turns[ref.turn].Query)
	}
	c.near = similar.NewIndex(vecs)
}

// normalizeQuery folds case and collapses whitespace.
func normalizeQuery(q string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(q, unicode.IsSpace), " "))
}

// matchQuery finds a turn by query (exact, then normalised).
func (c *catalog) matchQuery(q string) (turnRef, bool) {
	if ref, ok := c.exact[q]; ok {
		return ref, true
	}
	ref, ok := c.loose[normalizeQuery(q)]
	return ref, ok
}

// matchInCassette finds a turn of one cassette by query, else its first turn.
func (c *catalog) matchInCassette(name, q string) turnRef {
	turns := c.scripts[name].Turns
	for i, t := range turns {
		if t.Query == q {
			return turnRef{name, i}
		}
	}
	n := normalizeQuery(q)
	for i, t := range turns {
		if normalizeQuery(t.Query) == n {
			return turnRef{name, i}
		}
	}
	return turnRef{name, 0}
}

// headerCassette returns the cassette the request names, if any.
func (c *catalog) headerCassette(r *http.Request) (string, *apiError) {
	name := strings.TrimSpace(r.Header.Get(HeaderCassette))
	if name == "" {
		return "", nil
	}
	name = strings.TrimSuffix(name, ".yaml")
	if err := cassette.ValidName(name); err != nil {
		return "", invalidParam(fmt.Sprintf("%s: %v", HeaderCassette, err))
	}
	if _, ok := c.scripts[name]; !ok {
		return "", invalidParam(fmt.Sprintf("%s: no cassette named %q is loaded (loaded: %s)", HeaderCassette, name, strings.Join(c.names, ", ")))
	}
	return name, nil
}

// pick is a chosen recorded turn and how it was chosen (HeaderMatch):
// matchHeader, matchConversation, matchExact, matchSimilar with its score,
// or matchDefault. A catalog without cassettes (hybrid mode's empty
// folder) picks nothing: ref.cassette is "".
type pick struct {
	ref   turnRef
	how   string
	score float64
}

// selectTurn applies the selection rule (docs/mock/running.md, and
// docs/mock/hybrid.md for the nearest turn):
//  1. the X-Dify-Mock-Cassette header (within it: the conversation's next
//     turn when it is the conversation's cassette, else the turn whose query
//     matches, else its first turn);
//  2. a follow-up in a conversation: the next unplayed turn of the cassette
//     the conversation was replaying;
//  3. the turn whose recorded query equals the query;
//  4. the turn whose query matches after folding case and whitespace;
//  5. with a threshold (--match similar): the turn whose query is the most
//     similar (mockserver/internal/similar) at or above it;
//  6. the default cassette's first turn.
//
// convCassette/next describe the conversation ("" for a new one).
func (c *catalog) selectTurn(header, query, convCassette string, next int) pick {
	if _, ok := c.scripts[header]; header != "" && ok {
		if header == convCassette && next < len(c.scripts[header].Turns) {
			return pick{ref: turnRef{header, next}, how: matchHeader}
		}
		return pick{ref: c.matchInCassette(header, query), how: matchHeader}
	}
	if p, ok := c.matchRecorded(query, convCassette, next); ok {
		return p
	}
	return pick{ref: turnRef{c.def, 0}, how: matchDefault}
}

// matchRecorded is rules 2–5 of selectTurn: the turn a recorded
// conversation or query gives, if any.
func (c *catalog) matchRecorded(query, convCassette string, next int) (pick, bool) {
	if convCassette != "" {
		if sc, ok := c.scripts[convCassette]; ok && next < len(sc.Turns) {
			return pick{ref: turnRef{convCassette, next}, how: matchConversation}, true
		}
	}
	if ref, ok := c.matchQuery(query); ok {
		return pick{ref: ref, how: matchExact}, true
	}
	if c.threshold > 0 {
		if doc, score, ok := c.near.Best(similar.Parse(query), c.threshold); ok {
			return pick{ref: c.nearRefs[doc], how: matchSimilar, score: score}, true
		}
	}
	return pick{}, false
}

func (c *catalog) turn(ref turnRef) *replay.CompiledTurn {
	return c.scripts[ref.cassette].Turns[ref.turn]
}
