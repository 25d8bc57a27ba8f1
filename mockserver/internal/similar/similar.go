// Package similar scores how alike two short texts are without an
// embedding model: both are normalised into bags of words and compared by
// cosine similarity. dify-mock uses it where Dify would embed text and run
// a vector search (annotation reply, docs/mock/annotations.md), and for any
// other "closest text" choice, so that there is one notion of similarity.
//
// Normalisation: lower-cased, split into words of letters and digits (every
// other character separates words); a Han, Hiragana, Katakana or Hangul
// character is a word of its own. The score is 1 for the same words in any
// order, case or punctuation and 0 for no word in common.
//
// Cost. A text is read up to MaxWords words and the rest is ignored, as an
// embedding model reads a bounded input; an Index is built once (tokens and
// norms precomputed, an inverted index from word to documents) and then
// answers a query in time proportional to the query's words and the
// documents that share them, not to the whole collection.
package similar

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWords bounds the words read from one text. Dify embeds an
// annotation query with the app's embedding model, whose input is bounded
// (8,191 tokens for OpenAI's text-embedding models, 8,192 for most
// others); the mock reads the same order of words, so a 100 KB query costs
// what an 8,192-word one does.
const MaxWords = 8192

// Vector is a normalised text: each distinct word with its count, and the
// sum of the squared counts. The zero Vector has no words.
type Vector struct {
	words map[string]int32
	norm2 int64
}

// Len is the number of distinct words.
func (v Vector) Len() int { return len(v.words) }

// Parse normalises s into a Vector, reading at most MaxWords words.
func Parse(s string) Vector {
	v := Vector{words: map[string]int32{}}
	n := 0
	start := -1 // byte offset of the word being read, -1 between words
	add := func(w string) {
		v.words[strings.ToLower(w)]++
		n++
	}
	for i := 0; i < len(s) && n < MaxWords; {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case isIdeograph(r):
			if start >= 0 {
				add(s[start:i])
				start = -1
			}
			if n < MaxWords {
				add(s[i : i+size])
			}
		case r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				add(s[start:i])
				start = -1
			}
		}
		i += size
	}
	if start >= 0 && n < MaxWords {
		add(s[start:])
	}
	for _, c := range v.words {
		v.norm2 += int64(c) * int64(c)
	}
	return v
}

func isIdeograph(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// Score is the cosine similarity of a and b, in [0, 1].
func Score(a, b Vector) float64 {
	if len(a.words) > len(b.words) {
		a, b = b, a
	}
	var dot int64
	for w, n := range a.words {
		dot += int64(n) * int64(b.words[w])
	}
	return cosine(dot, a.norm2, b.norm2)
}

func cosine(dot, na, nb int64) float64 {
	if dot == 0 || na == 0 || nb == 0 {
		return 0
	}
	return math.Min(float64(dot)/math.Sqrt(float64(na)*float64(nb)), 1) // rounding can land a hair above 1
}

// posting is one document's count of a word.
type posting struct {
	doc   int32
	count int32
}

// Index answers "which document is closest to this query" over a fixed
// set of documents. It is immutable once built, so any number of
// goroutines may query it without a lock.
type Index struct {
	norms []int64
	words map[string][]posting
}

// NewIndex indexes docs; a document's position in docs is its number.
func NewIndex(docs []Vector) *Index {
	ix := &Index{norms: make([]int64, len(docs)), words: map[string][]posting{}}
	for i, d := range docs {
		ix.norms[i] = d.norm2
		for w, n := range d.words {
			ix.words[w] = append(ix.words[w], posting{int32(i), n})
		}
	}
	return ix
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.norms) }

// Best returns the document with the highest score against q that reaches
// threshold, the later document on a tie; ok is false when none does. With
// a threshold of 0 or less every document reaches it, so the later of the
// best-scoring ones answers even with no word in common.
func (ix *Index) Best(q Vector, threshold float64) (doc int, score float64, ok bool) {
	// dots[d] accumulates the dot product of the query and document d;
	// touched lists the documents that share a word, so the scan below
	// costs what the query's postings cost, not the collection's size.
	dots := make([]int64, len(ix.norms))
	var touched []int32
	for w, n := range q.words {
		for _, p := range ix.words[w] {
			if dots[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			dots[p.doc] += int64(n) * int64(p.count)
		}
	}
	doc = -1
	for _, d := range touched {
		s := cosine(dots[d], q.norm2, ix.norms[d])
		if s < threshold {
			continue
		}
		if doc < 0 || s > score || (s == score && int(d) > doc) {
			doc, score = int(d), s
		}
	}
	if doc < 0 && threshold <= 0 && len(ix.norms) > 0 {
		return len(ix.norms) - 1, 0, true
	}
	return doc, score, doc >= 0
}
